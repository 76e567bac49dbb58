package rx_test

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// onGoroutine is an inner that delivers v on a goroutine of its own
// (FromChannel's) and completes: the inner of a ConcatMap whose consumer a
// test blocks while the outer's producer runs on.
func onGoroutine(v int) rx.Observable[int] {
	ch := make(chan int, 1)
	ch <- v
	close(ch)
	return rx.FromChannel(ch)
}

// firstOnGoroutine is onGoroutine for the first producer value (1000) and
// Return for the others.
func firstOnGoroutine(v int) rx.Observable[int] {
	if v == 1000 {
		return onGoroutine(v)
	}
	return rx.Return(v)
}

// seqRecorder records a stream's values and end; its OnNext blocks on the
// first value >= 1000 until release is closed.
type seqRecorder struct {
	mu      sync.Mutex
	vs      []int
	err     error
	ended   chan struct{}
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newSeqRecorder() *seqRecorder {
	return &seqRecorder{ended: make(chan struct{}), entered: make(chan struct{}), release: make(chan struct{})}
}

func (r *seqRecorder) OnNext(v int) {
	r.mu.Lock()
	r.vs = append(r.vs, v)
	r.mu.Unlock()
	if v >= 1000 {
		first := false
		r.once.Do(func() { first = true; close(r.entered) })
		if first {
			<-r.release
		}
	}
}
func (r *seqRecorder) OnError(err error) { r.err = err; close(r.ended) }
func (r *seqRecorder) OnCompleted()      { close(r.ended) }

// requireEveryValueInOrder waits (bounded) for the stream to end without
// an error and checks it delivered first, first+1, ... total values.
func (r *seqRecorder) requireEveryValueInOrder(t *testing.T, stuck string, total, first int) {
	t.Helper()
	select {
	case <-r.ended:
	case <-time.After(10 * time.Second):
		t.Fatal(stuck)
	}
	require.NoError(t, r.err)
	got := r.values()
	require.Len(t, got, total, "every value arrives")
	for i, v := range got {
		if v != first+i {
			t.Fatalf("value %d is %d, want %d: the order was not kept", i, v, first+i)
		}
	}
}

func (r *seqRecorder) values() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.vs)
}

// produce feeds 1000, 1001, ... (total values) into src and completes it,
// on a goroutine of its own, counting in accepted each value OnNext
// returned from; the channel closes when it is done.
func produce(src *rx.Subject[int], total int, accepted *atomic.Int64) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range total {
			src.OnNext(1000 + i)
			accepted.Add(1)
		}
		src.OnCompleted()
	}()
	return done
}

// waitParkedOrPast lets producers run until accepted exceeds limit or every
// other goroutine is parked (the producers wait for room), within a bound
// for a hang; it observes, and asserts nothing.
func waitParkedOrPast(accepted *atomic.Int64, limit int64) {
	for deadline := time.Now().Add(memoryBound); time.Now().Before(deadline) && accepted.Load() <= limit; {
		runtime.Gosched()
		if othersParked() && accepted.Load() <= limit {
			return
		}
	}
}

// A producer on another goroutine feeding ConcatMap faster than its inners
// complete fills the outer queue up to QueueLimit and then waits for room:
// the queue stays within its bound, and once the consumer goes on every
// value arrives, in order.
//
// Negative control, run by hand: without the wait in concatMapper.enqueue
// (the queue appended to without a bound, as before), the producer handed
// over all 66,536 values while the consumer was blocked and the test
// failed with "producer handed over 66536 values (bound 65537)".
func TestConcatMapHoldsAtMostQueueLimitOuterValuesWhileAFasterProducerWaits(t *testing.T) {
	outer := rx.NewSubject[int]()
	rec := newSeqRecorder()
	sub := rx.ConcatMap(outer, firstOnGoroutine).Subscribe(rec)
	defer sub.Unsubscribe()
	const total = rx.QueueLimit + 1000
	var accepted atomic.Int64
	producer := produce(outer, total, &accepted)
	select {
	case <-rec.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the consumer was never reached")
	}
	waitParkedOrPast(&accepted, rx.QueueLimit+1)
	// One value is in its inner (blocked in the consumer), QueueLimit wait.
	n := accepted.Load()
	close(rec.release)
	rec.requireEveryValueInOrder(t, "the stream did not end once the consumer went on", total, 1000)
	<-producer
	assert.LessOrEqual(t, n, int64(rx.QueueLimit+1), "producer handed over %d values (bound %d)", n, rx.QueueLimit+1)
}

// A value emitted into ConcatMap's outer stream from inside an inner's
// delivery, on the goroutine running the stage, never waits for room, even
// with the queue full: waiting there would wait for itself. It fails the
// stream with an *OverflowError instead (nothing is lost silently).
//
// Negative control, run by hand: with mayWait always true, the re-entrant
// OnNext waited for room that only its own goroutine could make, and the
// test failed with "the re-entrant value waited".
func TestAReentrantConcatMapValueNeverWaitsForRoom(t *testing.T) {
	outer, first := rx.NewSubject[int](), rx.NewSubject[int]()
	inners := func(v int) rx.Observable[int] {
		if v == 0 {
			return first
		}
		return rx.Return(v)
	}
	done := make(chan error, 1)
	var once sync.Once
	reentered := make(chan struct{})
	sub := rx.ConcatMap(outer, inners).Subscribe(rx.NewObserver(func(v int) {
		if v == 1 {
			// The queue holds QueueLimit-1 values: the first fills it,
			// the second finds it full, on the goroutine delivering.
			outer.OnNext(-1)
			outer.OnNext(-2)
			once.Do(func() { close(reentered) })
		}
	}, func(err error) { done <- err }, func() { done <- nil }))
	defer sub.Unsubscribe()
	outer.OnNext(0) // its inner, first, runs until completed
	for i := 1; i <= rx.QueueLimit; i++ {
		outer.OnNext(i)
	}
	// first completes on a goroutine of its own: the pump runs there and delivers 1,
	// whose observer feeds the outer stream again.
	go first.OnCompleted()
	oe := requireOverflowWithoutWaiting(t, reentered, done)
	assert.Equal(t, "ConcatMap", oe.Op)
}

// requireOverflowWithoutWaiting waits (bounded) for a re-entrant value to
// have returned (reentered closed) and the stream to end (done), and
// checks that it ended with an *OverflowError at QueueLimit.
func requireOverflowWithoutWaiting(t *testing.T, reentered <-chan struct{}, done <-chan error) *rx.OverflowError {
	t.Helper()
	select {
	case <-reentered:
	case <-time.After(10 * time.Second):
		t.Fatal("the re-entrant value waited")
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end")
	}
	var oe *rx.OverflowError
	require.True(t, errors.As(err, &oe), "want an *OverflowError, got %v", err)
	assert.Equal(t, rx.QueueLimit, oe.Limit)
	return oe
}

// An outer stream that emits inside Subscribe (a synchronous source) more
// than QueueLimit values while its first inner runs fails ConcatMap with an
// *OverflowError rather than waiting inside Subscribe, where no room could
// come (the inner may need the caller to go on, as a virtual clock does).
//
// Negative control, run by hand: with mayWait always true, Subscribe waited
// for room and the test failed with "Subscribe waited".
func TestASynchronousOuterPastQueueLimitFailsConcatMapInsteadOfWaiting(t *testing.T) {
	never := rx.Never[int]()
	done := make(chan error, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		rx.ConcatMap(rx.Range(0, rx.QueueLimit+2), func(int) rx.Observable[int] { return never }).
			Subscribe(rx.NewObserver(func(int) {}, func(err error) { done <- err }, func() { done <- nil }))
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Subscribe waited")
	}
	var oe *rx.OverflowError
	err := <-done
	require.True(t, errors.As(err, &oe), "want an *OverflowError, got %v", err)
	assert.Equal(t, rx.QueueLimit, oe.Limit)
}

// A value emitted into the outer stream of an operator that queues its
// sources (ConcatMap, ConcatAll, SelectManyLimit) from inside an inner's
// delivery, on that inner's goroutine, never waits for room, even with the
// queue full and every slot taken: the room may have to come from that very
// inner. It fails the stream with an *OverflowError instead. Every slot's
// inner counts, not only the last one started.
//
// Negative control, run by hand: with mayWait looking only at the goroutines
// inside Subscribe and running the pump (not at the live inners'
// deliveries), every row waited and failed with "the re-entrant value
// waited".
func TestAValueFromInsideAnyInnersDeliveryNeverWaitsForRoom(t *testing.T) {
	for _, row := range []struct {
		name  string
		slots int
		build func(outer rx.Observable[int], f func(int) rx.Observable[int]) rx.Observable[int]
	}{
		{"ConcatMap", 1, rx.ConcatMap[int, int]},
		{"ConcatAll", 1, func(outer rx.Observable[int], f func(int) rx.Observable[int]) rx.Observable[int] {
			return rx.ConcatAll(rx.Map(outer, f))
		}},
		{"SelectManyLimit(1)", 1, func(outer rx.Observable[int], f func(int) rx.Observable[int]) rx.Observable[int] {
			return rx.SelectManyLimit(outer, f, 1)
		}},
		{"SelectManyLimit(3)", 3, func(outer rx.Observable[int], f func(int) rx.Observable[int]) rx.Observable[int] {
			return rx.SelectManyLimit(outer, f, 3)
		}},
	} {
		t.Run(row.name, func(t *testing.T) {
			outer := rx.NewSubject[int]()
			running := make([]*rx.Subject[int], row.slots)
			for i := range running {
				running[i] = rx.NewSubject[int]()
			}
			inners := func(v int) rx.Observable[int] {
				if v >= 0 && v < row.slots {
					return running[v]
				}
				return rx.Return(v)
			}
			done := make(chan error, 1)
			reentered := make(chan struct{})
			sub := row.build(outer, inners).Subscribe(rx.NewObserver(func(v int) {
				if v == -7 {
					outer.OnNext(-1) // the queue is full
					close(reentered)
				}
			}, func(err error) { done <- err }, func() { done <- nil }))
			defer sub.Unsubscribe()
			for i := range row.slots { // every slot taken
				outer.OnNext(i)
			}
			for i := range rx.QueueLimit {
				outer.OnNext(1000 + i)
			}
			// The first slot's inner delivers on a goroutine of its own.
			go running[0].OnNext(-7)
			requireOverflowWithoutWaiting(t, reentered, done)
		})
	}
}

// A producer waiting for room in an operator whose queue is full returns
// when the subscription ends (its value dropped): an Unsubscribe from
// another goroutine releases it, for every operator whose producers wait
// (the holdsLimitWaits rows of the bound table; one missing here fails the
// test: run by hand with the Delay row renamed, "Delay makes producers wait
// for room (holdsLimitWaits) but has no row here").
//
// Negative control, run by hand: with room.wait ignoring the done channel
// (waiting for the space channel alone), the ConcatMap, ConcatAll and
// SelectManyLimit rows failed with "the waiting producer did not return
// once the subscription ended"; Delay's passed, its cancellation also
// waking its room.
func TestAProducerWaitingForRoomReturnsWhenTheSubscriptionEnds(t *testing.T) {
	never := func(int) rx.Observable[int] { return rx.Never[int]() }
	rows := map[string]func(in rx.Observable[int], clk *rxtest.Clock) rx.Observable[int]{
		"ConcatMap": func(in rx.Observable[int], _ *rxtest.Clock) rx.Observable[int] { return rx.ConcatMap(in, never) },
		"ConcatAll": func(in rx.Observable[int], _ *rxtest.Clock) rx.Observable[int] {
			return rx.ConcatAll(rx.Map(in, never))
		},
		"SelectManyLimit": func(in rx.Observable[int], _ *rxtest.Clock) rx.Observable[int] {
			return rx.SelectManyLimit(in, never, 2) // both slots taken
		},
		"Delay": func(in rx.Observable[int], clk *rxtest.Clock) rx.Observable[int] {
			return rx.Delay(in, time.Second, clk)
		},
	}
	for _, x := range holdTable() {
		if _, listed := rows[x.name]; x.class == holdsLimitWaits && !listed {
			t.Errorf("%s makes producers wait for room (holdsLimitWaits) but has no row here", x.name)
		}
	}
	for name, build := range rows {
		t.Run(name, func(t *testing.T) {
			in, clk := rx.NewSubject[int](), rxtest.NewClock()
			sub := build(in, clk).Subscribe(rx.NewObserver(func(int) {}, nil, nil))
			var accepted atomic.Int64
			producer := make(chan struct{})
			go func() {
				defer close(producer)
				for i := range rx.QueueLimit + 10 {
					in.OnNext(i)
					accepted.Add(1)
				}
			}()
			waitParkedOrPast(&accepted, rx.QueueLimit+2)
			require.Less(t, accepted.Load(), int64(rx.QueueLimit+10), "the producer is waiting for room")
			sub.Unsubscribe()
			select {
			case <-producer:
			case <-time.After(10 * time.Second):
				t.Fatal("the waiting producer did not return once the subscription ended")
			}
		})
	}
}
