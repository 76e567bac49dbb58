package rx_test

import (
	"context"
	"errors"
	"iter"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// drain ranges over seq and returns the values and errors it yielded.
func drain[T any](seq iter.Seq2[T, error]) (vs []T, errs []error) {
	for v, err := range seq {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		vs = append(vs, v)
	}
	return vs, errs
}

func TestAllYieldsEveryValueOfASynchronousSourceThenEnds(t *testing.T) {
	vs, errs := drain(rx.All(context.Background(), rx.Range(0, 5)))
	assert.Equal(t, []int{0, 1, 2, 3, 4}, vs)
	assert.Empty(t, errs)
}

func TestAllYieldsTheValuesOfAGoroutineSource(t *testing.T) {
	ch := make(chan int)
	go func() {
		defer close(ch)
		for i := range 100 {
			ch <- i
		}
	}()
	vs, errs := drain(rx.All(context.Background(), rx.FromChannel(ch)))
	assert.Len(t, vs, 100)
	assert.Equal(t, 99, vs[99])
	assert.Empty(t, errs)
}

func TestAllYieldsTheSourcesErrorOnceAndStops(t *testing.T) {
	src := rx.Concat(rx.Of(1, 2), rx.Throw[int](rxtest.ErrTest), rx.Of(3))
	vs, errs := drain(rx.All(context.Background(), src))
	assert.Equal(t, []int{1, 2}, vs)
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], rxtest.ErrTest)
}

func TestAllYieldsTheContextErrorWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var producer context.Context
	src := rx.Create(func(pctx context.Context, o rx.Observer[int]) {
		producer = pctx
		go func() {
			for i := 0; pctx.Err() == nil; i++ {
				o.OnNext(i)
			}
		}()
	})
	var vs []int
	var errs []error
	for v, err := range rx.All(ctx, src) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		vs = append(vs, v)
		if v == 2 {
			cancel()
		}
	}
	assert.Equal(t, []int{0, 1, 2}, vs, "a value ready together with the end of ctx is not yielded")
	assert.Equal(t, []error{context.Canceled}, errs)
	assert.Error(t, producer.Err(), "the source is unsubscribed")
}

func TestAllEndsWithTheContextWhileTheSourceIsStillInsideSubscribe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	// A producer that loops on the subscribing goroutine, honouring only its
	// own ctx: nothing but the end of the subscription stops it.
	src := rx.Create(func(pctx context.Context, o rx.Observer[int]) {
		close(started)
		<-pctx.Done()
	})
	go func() {
		<-started
		cancel()
	}()
	vs, errs := drain(rx.All(ctx, src))
	assert.Empty(t, vs)
	assert.Equal(t, []error{context.Canceled}, errs)
}

func TestAllOnAnEndedContextYieldsItsErrorWithoutSubscribing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	subscribed := false
	src := rx.Defer(func() rx.Observable[int] { subscribed = true; return rx.Of(1) })
	_, errs := drain(rx.All(ctx, src))
	assert.Equal(t, []error{context.Canceled}, errs)
	assert.False(t, subscribed)
}

func TestBreakingOutOfAllUnsubscribesAnEndlessSynchronousSource(t *testing.T) {
	var emitted atomic.Int64
	src := rx.Do(rx.Range(0, math.MaxInt), func(int) { emitted.Add(1) })
	var vs []int
	for v, err := range rx.All(context.Background(), src) {
		require.NoError(t, err)
		vs = append(vs, v)
		if len(vs) == 3 {
			break
		}
	}
	assert.Equal(t, []int{0, 1, 2}, vs)
	// The producer is blocked handing over the 4th value at most.
	assert.LessOrEqual(t, emitted.Load(), int64(4))
}

func TestBreakingOutOfAllUnsubscribesAGoroutineSourceAndLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)
	var producer context.Context
	exited := make(chan struct{})
	src := rx.Create(func(pctx context.Context, o rx.Observer[int]) {
		producer = pctx
		go func() {
			defer close(exited)
			for i := 0; pctx.Err() == nil; i++ {
				o.OnNext(i)
			}
		}()
	})
	n := 0
	for _, err := range rx.All(context.Background(), src) {
		require.NoError(t, err)
		if n++; n == 5 {
			break
		}
	}
	require.Error(t, producer.Err(), "break unsubscribed the source")
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the producer was not released from its hand-over within 5s")
	}
}

// collectThenRange is the naive bridge All must not be: it collects first,
// so the source runs ahead of the loop body without bound.
func collectThenRange[T any](ctx context.Context, src rx.Observable[T]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		vs, err := rx.Collect(ctx, src)
		for _, v := range vs {
			if !yield(v, nil) {
				return
			}
		}
		if err != nil {
			yield(*new(T), err)
		}
	}
}

func TestTheSourceWaitsWhileTheLoopBodyRuns(t *testing.T) {
	// ahead reports, per value, how many values the source had emitted when
	// the loop body ran: exactly one per value when the source waits.
	ahead := func(ranger func(context.Context, rx.Observable[int]) iter.Seq2[int, error]) []int64 {
		var emitted atomic.Int64
		src := rx.Do(rx.Range(0, 1000), func(int) { emitted.Add(1) })
		var seen []int64
		for v, err := range ranger(context.Background(), src) {
			require.NoError(t, err)
			seen = append(seen, emitted.Load()-int64(v))
		}
		return seen
	}
	for _, d := range ahead(rx.All[int]) {
		require.EqualValues(t, 1, d, "the source ran ahead of the loop body")
	}
	t.Run("negative control: a bridge that buffers lets the source run ahead", func(t *testing.T) {
		assert.EqualValues(t, 1000, ahead(collectThenRange[int])[0])
	})
}

func TestAllYieldsAFailedStreamsNilErrorAsAnError(t *testing.T) {
	src := rx.Create(func(_ context.Context, o rx.Observer[int]) { o.OnError(nil) })
	_, errs := drain(rx.All(context.Background(), src))
	require.Len(t, errs, 1)
	assert.Error(t, errs[0])
}

func TestAllReleasesTheSourceWhenTheLoopBodyPanics(t *testing.T) {
	var producer context.Context
	src := rx.Create(func(pctx context.Context, o rx.Observer[int]) {
		producer = pctx
		o.OnNext(1)
		o.OnNext(2)
	})
	func() {
		defer func() { assert.Equal(t, "boom", recover()) }()
		for range rx.All(context.Background(), src) {
			panic("boom")
		}
	}()
	assert.Error(t, producer.Err())
}

func TestUnsubscribingFromSeqStopsTheIteration(t *testing.T) {
	var yielded, stopped atomic.Int64
	naturals := func(yield func(int) bool) {
		for i := 0; ; i++ {
			yielded.Add(1)
			if !yield(i) {
				stopped.Add(1)
				return
			}
		}
	}
	vs, err := rx.Collect(context.Background(), rx.Take(rx.FromSeq(naturals), 3))
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2}, vs)
	// Without the stop the endless seq would never return: Collect would hang.
	assert.EqualValues(t, 3, yielded.Load())
	assert.EqualValues(t, 1, stopped.Load())
}

func TestFromSeqEmitsTheSequenceAndCompletes(t *testing.T) {
	seq := func(yield func(string) bool) {
		for _, s := range []string{"a", "b"} {
			if !yield(s) {
				return
			}
		}
	}
	rec := rxtest.Record(nil, rx.FromSeq(seq))
	assert.Equal(t, []string{"a", "b"}, rec.Values())
	assert.True(t, rec.Completed())
	require.NoError(t, rec.GrammarErr())
}

func TestAllAndFromSeqRoundTrip(t *testing.T) {
	back := func(yield func(int) bool) {
		for v, err := range rx.All(context.Background(), rx.Range(1, 3)) {
			if err != nil || !yield(v) {
				return
			}
		}
	}
	vs, err := rx.Collect(context.Background(), rx.FromSeq(back))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3}, vs)
}

func TestALoopBodyThatFeedsTheSubjectItRangesOverDoesNotDeadlock(t *testing.T) {
	// The source waits inside its own delivery while the body runs, so the
	// body's OnNext on the same subject is queued by the subject, not
	// handed over to the goroutine that is running the body.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := rx.NewBehaviorSubject(0)
	var vs []int
	for v, err := range rx.All[int](ctx, s) {
		require.NoError(t, err, "the loop must end by itself, long before its deadline")
		vs = append(vs, v)
		if v == 4 {
			break
		}
		s.OnNext(v + 1)
	}
	assert.Equal(t, []int{0, 1, 2, 3, 4}, vs)
}

func TestALoopBodyThatAdvancesTheVirtualClockOfItsSourceGetsTheValuesItCaused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	clk := rxtest.NewClock()
	// -1 comes from the subscribing goroutine; every later value is emitted
	// on the ranging goroutine, by the Advance inside the loop body, while
	// the delivery of the previous value waits for that body to return.
	src := rx.Take(rx.Merge(rx.Interval(time.Second, clk), rx.Return(-1)), 5)
	var vs []int
	for v, err := range rx.All(ctx, src) {
		require.NoError(t, err, "the loop must end by itself, long before its deadline")
		vs = append(vs, v)
		clk.Advance(time.Second)
	}
	assert.Equal(t, []int{-1, 0, 1, 2, 3}, vs)
}

// signalClock is a racingClock that says when a callback has been scheduled.
type signalClock struct {
	*racingClock
	scheduled chan struct{}
}

func (c signalClock) Schedule(d time.Duration, f func()) (stop func() bool) {
	stop = c.racingClock.Schedule(d, f)
	select {
	case c.scheduled <- struct{}{}:
	default:
	}
	return stop
}

func TestBreakingOutOfAllWhileATimerDeliversOnAnotherGoroutineDoesNotDeadlock(t *testing.T) {
	// Debounce delivers from its timer callback holding the gate that makes
	// Unsubscribe wait for it; that delivery waits in All's hand-over. The
	// break cancels the subscription: the hand-over must be released before
	// Unsubscribe waits for the gate, or neither ever returns. (Negative
	// control, run by hand: with All's hand-over released by a cleanup of
	// the cancellation instead of its done channel, this test fails at its
	// 10s bound.)
	clk := signalClock{&racingClock{Clock: rxtest.NewClock()}, make(chan struct{}, 1)}
	src := rx.Debounce[int](rx.NewBehaviorSubject(7), time.Second, clk)
	var wg sync.WaitGroup
	go func() {
		<-clk.scheduled // Debounce holds 7 and armed its timer
		clk.Advance(time.Hour)
		clk.fire(&wg)
	}()
	finished := make(chan []int)
	go func() {
		var vs []int
		for v := range rx.All(context.Background(), src) {
			vs = append(vs, v)
			break
		}
		finished <- vs
	}()
	select {
	case vs := <-finished:
		assert.Equal(t, []int{7}, vs)
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not end within 10s of its break")
	}
	wg.Wait()
}

func TestAPanicInsideTheSourceIsRaisedOnTheRangingGoroutine(t *testing.T) {
	src := rx.Map(rx.Range(0, 3), func(v int) int {
		if v == 1 {
			panic("boom")
		}
		return v
	})
	var vs []int
	func() {
		defer func() { assert.Equal(t, "boom", recover()) }()
		for v, err := range rx.All(context.Background(), src) {
			require.NoError(t, err)
			vs = append(vs, v)
		}
	}()
	assert.Equal(t, []int{0}, vs)
}

func TestAllAndFromSeqRefuseNilWithAnError(t *testing.T) {
	_, errs := drain(rx.All[int](context.Background(), nil))
	require.Len(t, errs, 1)
	_, err := rx.Collect(context.Background(), rx.FromSeq[int](nil))
	var ae *rx.ArgumentError
	assert.True(t, errors.As(err, &ae))
}

// allAhead is the bound All's doc gives a producer on another goroutine:
// 64 values queued in the hand-off and 64 in the batch the body works
// through.
const allAhead = 2 * 64

func TestAChannelProducerFeedingAllWaitsForTheLoopBody(t *testing.T) {
	// The hand-off is bounded: while the body handles value i, the producer
	// has sent at most i+1+allAhead values (the +1 is the value
	// FromChannel's goroutine holds while it waits for room).
	const n = 20_000
	ahead := func(ranger func(context.Context, rx.Observable[int]) iter.Seq2[int, error]) (worst int64) {
		ch := make(chan int)
		var sent atomic.Int64
		go func() {
			defer close(ch)
			for i := range n {
				ch <- i
				sent.Add(1)
			}
		}()
		for v, err := range ranger(context.Background(), rx.FromChannel(ch)) {
			require.NoError(t, err)
			worst = max(worst, sent.Load()-int64(v))
		}
		return worst
	}
	assert.LessOrEqual(t, ahead(rx.All[int]), int64(allAhead+1))
	t.Run("negative control: a bridge that buffers drains the producer first", func(t *testing.T) {
		assert.EqualValues(t, n, ahead(collectThenRange[int]))
	})
}

// orderedAcrossGoroutines emits 0..9 from a goroutine while produce, on the
// subscribing goroutine, waits for it (the hand-off queues them without
// making the producer wait), then emits 10 on the subscribing goroutine and
// completes.
func orderedAcrossGoroutines(t *testing.T) rx.Observable[int] {
	return rx.Create(func(_ context.Context, o rx.Observer[int]) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 10 {
				o.OnNext(i)
			}
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("the producer goroutine was made to wait for the loop body, which had not started")
		}
		o.OnNext(10)
		o.OnCompleted()
	})
}

// A value delivered on the ranging goroutine after values handed over from
// another goroutine runs after them. Negative control: without the
// a.pending check in allObserver.OnNext's ranging-goroutine path (the value
// then runs the body at once) the loop yields [10 0 1 ... 9].
func TestAllYieldsValuesHandedOverFromAnotherGoroutineBeforeALaterValueOnItsOwn(t *testing.T) {
	defer goleak.VerifyNone(t)
	vs, errs := drain(rx.All(context.Background(), orderedAcrossGoroutines(t)))
	assert.Empty(t, errs)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, vs)
}

// A producer faster than the body runs ahead of it by a bounded batch: its
// OnNext returns once the value is queued, so while the body is busy the
// producer hands over up to 64 more values (a goroutine switch per batch
// rather than two per value), and never more than allAhead. The body waits
// (bounded) at each of its first values until the producer has handed the
// next 64 over. Negative controls, run by hand on iterate.go: with
// allHandOff = 1 (one value in transit, as All did before) the producer
// stalls and the first assertion fails; without the wait for room in
// allObserver.OnNext (an unbounded queue) the last one fails (worst ≈ n).
func TestAGoroutineProducerRunsAheadOfAllsBodyByABoundedBatch(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 10_000
	var sent atomic.Int64
	src := rx.Create(func(ctx context.Context, o rx.Observer[int]) {
		go func() {
			for i := 0; i < n && ctx.Err() == nil; i++ {
				o.OnNext(i)
				sent.Add(1)
			}
			o.OnCompleted()
		}()
	})
	var worst int64
	got, stalled := 0, false
	for v, err := range rx.All(context.Background(), src) {
		require.NoError(t, err)
		got++
		if v < 200 && !stalled {
			want := min(int64(v)+65, n)
			deadline := time.Now().Add(5 * time.Second)
			for sent.Load() < want {
				if time.Now().After(deadline) {
					stalled = true
					break
				}
				runtime.Gosched()
			}
		}
		worst = max(worst, sent.Load()-int64(v))
	}
	assert.Equal(t, n, got)
	assert.False(t, stalled, "the producer waited for the body: nothing was handed over ahead of it")
	assert.LessOrEqual(t, worst, int64(allAhead+1), "the producer ran further ahead than the bound")
}

// Issue 19 §3: a work queue — the loop body pushes follow-up items into the
// subject it ranges over, hundreds of them queued at once, under a context
// that never ends. The subject delivers on the ranging goroutine (All
// subscribes there and runs the body inside the delivery), so the body's
// OnNext is re-entrant: queued, never made to wait. Negative control: with
// All subscribing on a goroutine of its own (as at e7c516e) the body's
// OnNext was not re-entrant, waited for room past 32 queued items, and the
// test failed at its bound.
func TestALoopBodyFeedingTheSubjectItRangesOverRunsAWorkQueueOfAnySize(t *testing.T) {
	const n = 1000
	queues := map[string]func() (rx.Observable[int], func(int)){
		"Subject seeded by Merge": func() (rx.Observable[int], func(int)) {
			s := rx.NewSubject[int]()
			return rx.Merge[int](s, rx.Of(0)), s.OnNext
		},
		"BehaviorSubject": func() (rx.Observable[int], func(int)) {
			s := rx.NewBehaviorSubject(0)
			return s, s.OnNext
		},
		"ReplaySubject": func() (rx.Observable[int], func(int)) {
			s := rx.NewReplaySubject[int](0)
			s.OnNext(0)
			return s, s.OnNext
		},
	}
	for name, queue := range queues {
		t.Run(name, func(t *testing.T) {
			src, push := queue()
			var order []int
			within(t, "the work queue", func() {
				for v, err := range rx.All(context.Background(), src) {
					if err != nil {
						t.Error(err)
						return
					}
					order = append(order, v)
					if len(order) == n {
						break
					}
					// Node v of a binary tree has children 2v+1 and 2v+2:
					// the queue holds about half the tree at its widest.
					for _, c := range []int{2*v + 1, 2*v + 2} {
						if c < n {
							push(c)
						}
					}
				}
			})
			require.Len(t, order, n)
			for i, v := range order {
				require.Equal(t, i, v, "breadth-first order")
			}
		})
	}
}

// All runs the body inside the delivery of a source that delivers on the
// ranging goroutine: no goroutine is started, and a break stops the source's
// own loop at once. Negative control: with All's former goroutine hop, the
// delivering goroutine differed from the ranging one and the first assertion
// failed.
func TestAllRunsTheBodyInsideTheSourcesLoopOnTheRangingGoroutine(t *testing.T) {
	var emitted atomic.Int64
	ranging := goroutineID()
	for v := range rx.All(context.Background(), rx.Do(rx.Range(0, 1_000_000), func(int) {
		emitted.Add(1)
		if goroutineID() != ranging {
			t.Error("the source delivered on another goroutine than the ranging one")
		}
	})) {
		if v == 2 {
			break
		}
	}
	assert.Equal(t, int64(3), emitted.Load(), "the break stopped the source right after the value it was handling")
}

// A producer on another goroutine whose end All takes while values are
// still queued ahead of it (the body holds the first until the producer's
// OnCompleted has returned, having cancelled the subscription there) still
// has every value yielded, then the completion. Negative control (run):
// with yieldOne also stopping once the subscription is cancelled, the loop
// yielded none of the 10.
func TestAGoroutineSourcesEndCancelsItsSubscriptionWithoutDroppingTheValuesQueuedAheadOfIt(t *testing.T) {
	defer goleak.VerifyNone(t)
	ended := make(chan struct{})
	finally := false
	src := rx.Finally(rx.Create(func(_ context.Context, o rx.Observer[int]) {
		go func() {
			for i := range 10 {
				o.OnNext(i)
			}
			o.OnCompleted()
			close(ended)
		}()
	}), func() { finally = true })
	var got []int
	for v, err := range rx.All(context.Background(), src) {
		require.NoError(t, err)
		if v == 0 {
			select {
			case <-ended:
			case <-time.After(30 * time.Second): // a hang guard, never reached when the test passes
				t.Fatal("the producer did not end within 30s")
			}
			assert.True(t, finally, "the end's cancellation ran the Finally before OnCompleted returned")
		}
		got = append(got, v)
	}
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, got)
}
