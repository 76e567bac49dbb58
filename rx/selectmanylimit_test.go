package rx_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// fourInners returns, for outer values 1..4, cold inners of 100ms that emit
// 10*i at 50ms (RxJS's mergeMap(f, 2) marble test in virtual time).
func fourInners(clk *rxtest.Clock) (map[int]*rxtest.TestObservable[int], func(int) rx.Observable[int]) {
	ys := map[int]*rxtest.TestObservable[int]{}
	for i := 1; i <= 4; i++ {
		ys[i] = rxtest.Cold(clk, rxtest.Next(ms(50), 10*i), rxtest.Completed[int](ms(100)))
	}
	return ys, func(i int) rx.Observable[int] { return ys[i] }
}

// RxJS mergeMap(project, concurrent): with a limit of 2 the third and fourth
// inner start as the first two complete. Negative control: SelectMany, the
// same stream without the limit, starts all four at 210.
func TestSelectManyLimitStartsAWaitingInnerWhenASlotFrees(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(210), 3),
		rxtest.Next(ms(210), 4), rxtest.Completed[int](ms(220)))
	ys, f := fourInners(clk)
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.SelectManyLimit(xs, f, 2) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(260), 10), rxtest.Next(ms(260), 20),
		rxtest.Next(ms(360), 30), rxtest.Next(ms(360), 40), rxtest.Completed[int](ms(410))}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(310), ms(410))}, ys[3].Subscriptions())

	clk = rxtest.NewClock()
	xs = rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(210), 3),
		rxtest.Next(ms(210), 4), rxtest.Completed[int](ms(220)))
	ys, f = fourInners(clk)
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.SelectMany(xs, f) })
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(210), ms(310))}, ys[3].Subscriptions(), "control: no limit")
	assert.Len(t, res.Values(), 4)
}

// The queue of outer values waiting for a slot is bounded: one more than
// QueueLimit waiting fails the stream. Negative control: exactly QueueLimit
// waiting is accepted.
func TestSelectManyLimitFailsWhenMoreThanQueueLimitSourcesWait(t *testing.T) {
	never := func(int) rx.Observable[int] { return rx.Never[int]() }
	rec := rxtest.Record(nil, rx.SelectManyLimit(rx.Range(0, rx.QueueLimit+2), never, 1))
	var oe *rx.OverflowError
	require.True(t, errors.As(rec.Err(), &oe), "got %v", rec.Err())
	assert.Equal(t, "SelectManyLimit", oe.Op)
	assert.Contains(t, oe.Error(), "values waiting for a free slot")

	ctl := rxtest.Record(nil, rx.SelectManyLimit(rx.Range(0, rx.QueueLimit+1), never, 1))
	assert.False(t, ctl.Terminated(), "control: one running and QueueLimit waiting")
	ctl.Unsubscribe()
}

func TestSelectManyLimitBelowOneFailsWithAnArgumentError(t *testing.T) {
	_, err := collect(t, rx.SelectManyLimit(rx.Of(1), func(v int) rx.Observable[int] { return rx.Return(v) }, 0))
	var ae *rx.ArgumentError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, "n", ae.Arg)
	vs, err := collect(t, rx.SelectManyLimit(rx.Of(1, 2), func(v int) rx.Observable[int] { return rx.Return(v) }, 1))
	require.NoError(t, err, "control: n = 1")
	assert.Equal(t, []int{1, 2}, vs)
}

// A long run of synchronous inners is started from a loop, not recursively.
// Negative control: the count shows every inner ran (a recursive engine
// would need 1e5 nested frames to get there).
func TestSelectManyLimitRunsSynchronousInnersWithoutGrowingTheStack(t *testing.T) {
	const n = 100_000
	depth := 0
	vs, err := collect(t, rx.SelectManyLimit(rx.Range(0, n), func(v int) rx.Observable[int] {
		var pcs [64]uintptr
		depth = max(depth, runtime.Callers(0, pcs[:]))
		return rx.Return(v)
	}, 1))
	require.NoError(t, err)
	assert.Len(t, vs, n)
	assert.Less(t, depth, 64, "the selector runs at a constant depth")
}

// Issue 19's rule for fan-in stages: a consumer failing the stage from
// inside OnNext while a producer waits for room does not deadlock; the
// waiting producer is released by the stage's end. Negative control: the
// same consumer without the failure leaves the stream running (the test's
// own check that the failure is what ended it).
func TestAConsumerFailingSelectManyLimitOrMergeAllFromInsideOnNextDoesNotDeadlock(t *testing.T) {
	cases := map[string]func(pick func(int) rx.Observable[int]) rx.Observable[int]{
		"SelectManyLimit": func(pick func(int) rx.Observable[int]) rx.Observable[int] {
			return rx.SelectManyLimit(rx.Of(0, 1, 2), pick, 3)
		},
		"MergeAll": func(pick func(int) rx.Observable[int]) rx.Observable[int] {
			return rx.MergeAll(rx.Map(rx.Of(0, 1, 2), pick))
		},
	}
	for name, build := range cases {
		for _, fail := range []bool{true, false} {
			label := name + "/without the failure (control)"
			if fail {
				label = name + "/failing"
			}
			t.Run(label, func(t *testing.T) {
				clk := rxtest.NewClock()
				in, failer := rx.NewSubject[int](), rx.NewSubject[int]()
				ticks := rx.Interval(time.Millisecond, clk)
				src := build(func(i int) rx.Observable[int] { return []rx.Observable[int]{ticks, in, failer}[i] })
				ended := make(chan error, 1)
				entered := make(chan struct{})
				sub := src.Subscribe(rx.NewObserver(func(v int) {
					if v != -1 {
						return
					}
					close(entered)
					deadline := time.Now().Add(time.Second)
					for clk.Elapsed() < 33*time.Millisecond && time.Now().Before(deadline) {
						runtime.Gosched()
					}
					if fail {
						failer.OnError(rxtest.ErrTest)
					}
				}, func(err error) { ended <- err }, func() { ended <- nil }))
				var wg sync.WaitGroup
				wg.Go(func() { in.OnNext(-1) })
				<-entered
				wg.Go(func() { clk.Advance(100 * time.Millisecond) })
				within(t, "the failing delivery and the clock", wg.Wait)
				select {
				case err := <-ended:
					assert.True(t, fail, "only the failure ends it")
					assert.ErrorIs(t, err, rxtest.ErrTest)
				default:
					assert.False(t, fail, "the failure did not end the stream")
				}
				sub.Unsubscribe()
			})
		}
	}
}

// Goroutine inners at scale: every value arrives exactly once, and never
// more than n inners run at once. Negative control: SelectMany over the
// same inners runs more than n at once (its peak is counted the same way).
func TestSelectManyLimitNeverRunsMoreThanNGoroutineInnersAtOnce(t *testing.T) {
	const outer, perInner, n = 200, 500, 4
	run := func(limited bool) (values int, peak int64) {
		var running, top atomic.Int64
		// An inner counts as running from its subscription until just
		// before it signals its completion.
		f := func(k int) rx.Observable[int] {
			return rx.Create(func(ctx context.Context, o rx.Observer[int]) {
				now := running.Add(1)
				for p := top.Load(); now > p && !top.CompareAndSwap(p, now); p = top.Load() {
				}
				go func() {
					for i := 0; i < perInner && ctx.Err() == nil; i++ {
						o.OnNext(k*perInner + i)
					}
					running.Add(-1)
					o.OnCompleted()
				}()
			})
		}
		src := rx.SelectMany(rx.Range(0, outer), f)
		if limited {
			src = rx.SelectManyLimit(rx.Range(0, outer), f, n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		vs, err := rx.Collect(ctx, src)
		require.NoError(t, err)
		seen := map[int]bool{}
		for _, v := range vs {
			require.False(t, seen[v], "value %d twice", v)
			seen[v] = true
		}
		return len(vs), top.Load()
	}
	values, peak := run(true)
	assert.Equal(t, outer*perInner, values)
	assert.LessOrEqual(t, peak, int64(n))
	_, peak = run(false)
	assert.Greater(t, peak, int64(n), "control: unlimited")
}

// A selector that panics when the last inner completes, after the outer
// stream has ended, loses only its value: the values still queued run and
// the stream completes. Negative control: without the pump in flattener's
// deferred recovery path nothing pumps again, value 3 never runs and the
// stream never completes (seen failing so).
func TestAPanickingSelectorAfterTheOuterEndedLeavesTheRestToRunAndComplete(t *testing.T) {
	outer := rx.NewSubject[int]()
	first := rx.NewSubject[int]()
	f := func(v int) rx.Observable[int] {
		switch v {
		case 1:
			return first
		case 2:
			panic("boom")
		}
		return rx.Return(10 * v)
	}
	rec := rxtest.Record(nil, rx.SelectManyLimit[int, int](outer, f, 1))
	outer.OnNext(1)
	outer.OnNext(2)
	outer.OnNext(3)
	outer.OnCompleted()
	assert.Equal(t, "boom", recovered(first.OnCompleted), "the selector's panic reaches the caller")
	assert.Equal(t, []int{30}, rec.Values())
	assert.True(t, rec.Completed(), "the stream completes")
}
