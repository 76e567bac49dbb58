package rx_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The tests of issue 19 §2, §4, §5 and §6: where rx meets the code around it.

// deadlockBound is the real-time bound of a wait whose failure mode is a
// deadlock: a ceiling a passing run never comes near (at 1s, a loaded
// machine could reach it; the negative controls below, run on old commits,
// deadlocked and met any bound).
const deadlockBound = 10 * time.Second

// within fails the test if f has not returned after deadlockBound.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(deadlockBound):
		t.Fatalf("%s: still blocked after %s", what, deadlockBound)
	}
}

// spinUntil waits (yielding, for at most deadlockBound) until cond holds:
// it observes another goroutine's progress, it does not wait for an
// outcome the test asserts.
func spinUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(deadlockBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached after %s", what, deadlockBound)
		}
		runtime.Gosched()
	}
}

// Issue 19 §2. A slow consumer with mailboxCap ticks queued and the next one
// waiting for room fails the stream from inside OnNext. Negative control: at
// e7c516e (the producer waited for room until the downstream's scope ended,
// and the stage's end waited for the tick in flight) both cases deadlocked
// and failed at the 1s bound.
func TestAConsumerFailingAFanInFromInsideOnNextDoesNotDeadlockWithAProducerWaitingForRoom(t *testing.T) {
	// Each case builds the stream over the ticks, a subject that carries the
	// slow value (-1) and a subject the consumer fails from inside OnNext
	// (idle, so the failure runs at once, on the consumer's goroutine).
	cases := map[string]func(ticks rx.Observable[int], in, failer *rx.Subject[int]) rx.Observable[int]{
		"Merge": func(ticks rx.Observable[int], in, failer *rx.Subject[int]) rx.Observable[int] {
			return rx.Merge(ticks, in, failer)
		},
		"SelectMany": func(ticks rx.Observable[int], in, failer *rx.Subject[int]) rx.Observable[int] {
			return rx.SelectMany(rx.Of(0, 1, 2), func(i int) rx.Observable[int] {
				return []rx.Observable[int]{ticks, in, failer}[i]
			})
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			clk := rxtest.NewClock()
			in, failer := rx.NewSubject[int](), rx.NewSubject[int]()
			src := build(rx.Interval(time.Millisecond, clk), in, failer)
			ended := make(chan error, 1)
			entered := make(chan struct{})
			reached := true
			src.Subscribe(rx.NewObserver(func(v int) {
				if v != -1 {
					return
				}
				close(entered)
				// 32 ticks are queued behind this delivery; the 33rd waits for room.
				deadline := time.Now().Add(deadlockBound)
				for clk.Elapsed() < 33*time.Millisecond {
					if time.Now().After(deadline) {
						reached = false
						break
					}
					runtime.Gosched()
				}
				failer.OnError(rxtest.ErrTest)
			}, func(err error) { ended <- err }, func() { ended <- nil }))
			var wg sync.WaitGroup
			wg.Go(func() { in.OnNext(-1) }) // the slow delivery, on its own goroutine
			<-entered
			wg.Go(func() { clk.Advance(100 * time.Millisecond) })
			within(t, "the failing delivery and the clock", wg.Wait)
			require.True(t, reached, "the 33rd tick was never reached")
			select {
			case err := <-ended:
				assert.ErrorIs(t, err, rxtest.ErrTest)
			default:
				t.Fatal("the stream did not end")
			}
		})
	}
}

// Issue 19 §4: the contract is Rx.NET's Dispose — Unsubscribe never waits
// for an observer. An Interval consumer feeds an unbuffered channel; its
// reader stops reading and unsubscribes while the next tick is blocked in
// the send. Negative control: at e7c516e Unsubscribe waited for that tick
// (the gate) and the test failed at its 1s bound.
func TestUnsubscribeReturnsWhileATimerDeliveryIsBlockedInTheObserver(t *testing.T) {
	clk := rxtest.NewClock()
	ch := make(chan int)
	sub := rx.Interval(time.Second, clk).Subscribe(rx.NewObserver(func(v int) { ch <- v }, nil, nil))
	var advancing sync.WaitGroup
	advancing.Go(func() { clk.Advance(10 * time.Second) })
	for want := range 3 {
		require.Equal(t, want, <-ch)
	}
	spinUntil(t, "tick 3 in flight", func() bool { return clk.Elapsed() >= 4*time.Second })
	within(t, "Unsubscribe", sub.Unsubscribe)
	assert.Equal(t, 3, <-ch, "the delivery in flight when Unsubscribe was called may finish")
	within(t, "the clock", advancing.Wait)
	select {
	case v := <-ch:
		t.Fatalf("tick %d was delivered after Unsubscribe returned", v)
	default:
	}
	assert.Equal(t, 10*time.Second, clk.Elapsed(), "the ticks after Unsubscribe ran and delivered nothing")
}

// Issue 19 §5: a Subject fed from another goroutine, and a Create producer on
// its own goroutine: once Unsubscribe has returned, nothing more starts, also
// a value whose user function (here Map's) was running on the producer's
// goroutine when Unsubscribe was called. Negative control: at e7c516e Map
// forwarded the value its function returned after the unsubscription (the
// scope was checked only before the function), and the test failed with
// [1 2] received.
func TestNothingStartsAfterUnsubscribeReturnedOnAnotherGoroutine(t *testing.T) {
	sources := map[string]func() (rx.Observable[int], func(int)){
		"Subject": func() (rx.Observable[int], func(int)) {
			s := rx.NewSubject[int]()
			return s, s.OnNext
		},
		"Create": func() (rx.Observable[int], func(int)) {
			in, delivered := make(chan int), make(chan struct{}, 2)
			return rx.Create(func(ctx context.Context, o rx.Observer[int]) {
					go func() {
						for {
							select {
							case v := <-in:
								o.OnNext(v)
								delivered <- struct{}{}
							case <-ctx.Done():
								return
							}
						}
					}()
				}), func(v int) {
					in <- v
					<-delivered // push returns once the producer's OnNext has
				}
		},
	}
	for name, source := range sources {
		t.Run(name, func(t *testing.T) {
			src, push := source()
			inF, release := make(chan struct{}), make(chan struct{})
			var got []int
			var mu sync.Mutex
			sub := rx.Map(src, func(v int) int {
				if v == 2 {
					inF <- struct{}{}
					<-release
				}
				return v
			}).Subscribe(rx.NewObserver(func(v int) { mu.Lock(); got = append(got, v); mu.Unlock() }, nil, nil))
			var producer sync.WaitGroup
			producer.Go(func() {
				push(1)
				push(2)
			})
			<-inF // the producer's goroutine is inside Map's function for 2
			sub.Unsubscribe()
			close(release)
			producer.Wait()
			if name == "Subject" {
				push(3) // after Unsubscribe returned, on this goroutine
			}
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []int{1}, got)
		})
	}
}

// Issue 19 §6: an Unsubscribe made inside a user function stops the value
// in flight (and TakeWhile's completion), as Take does. Negative control: at
// e7c516e every one of these operators still delivered the value (or the
// completion) after the function had unsubscribed.
func TestUnsubscribeInsideAUserFunctionStopsTheValueInFlight(t *testing.T) {
	type op func(src rx.Observable[int], unsub func(v int)) rx.Observable[int]
	ops := map[string]op{
		"Do": func(src rx.Observable[int], unsub func(int)) rx.Observable[int] { return rx.Do(src, unsub) },
		"Map": func(src rx.Observable[int], unsub func(int)) rx.Observable[int] {
			return rx.Map(src, func(v int) int { unsub(v); return v })
		},
		"Filter": func(src rx.Observable[int], unsub func(int)) rx.Observable[int] {
			return rx.Filter(src, func(v int) bool { unsub(v); return true })
		},
		"Scan": func(src rx.Observable[int], unsub func(int)) rx.Observable[int] {
			return rx.Scan(src, 0, func(_, v int) int { unsub(v); return v })
		},
		"TakeWhile": func(src rx.Observable[int], unsub func(int)) rx.Observable[int] {
			return rx.TakeWhile(src, func(v int) bool { unsub(v); return v < 2 })
		},
		"SkipWhile": func(src rx.Observable[int], unsub func(int)) rx.Observable[int] {
			return rx.SkipWhile(src, func(v int) bool { unsub(v); return v < 2 }) // skips 1
		},
		"CombineLatest2": func(src rx.Observable[int], unsub func(int)) rx.Observable[int] {
			return rx.CombineLatest2(src, rx.Return(0), func(v, _ int) int { unsub(v); return v })
		},
		"Zip2": func(src rx.Observable[int], unsub func(int)) rx.Observable[int] {
			return rx.Zip2(src, rx.Of(0, 0, 0), func(v, _ int) int { unsub(v); return v })
		},
	}
	for name, build := range ops {
		t.Run(name, func(t *testing.T) {
			s := rx.NewSubject[int]()
			var sub rx.Subscription
			rec := rxtest.NewRecorder[int](nil)
			sub = build(s, func(v int) {
				if v == 2 {
					sub.Unsubscribe()
				}
			}).Subscribe(rec)
			s.OnNext(1)
			s.OnNext(2)
			s.OnNext(3)
			s.OnCompleted()
			for _, v := range rec.Values() {
				assert.Less(t, v, 2, "a value reached the observer after the function unsubscribed")
			}
			assert.False(t, rec.Terminated(), "nothing ends a stream its observer has left")
		})
	}
}
