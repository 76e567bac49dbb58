package rx_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// interleaved maps 1 to values at 10, 30, 50 and 2 to values at 20, 40, 60
// (ticks after the mapping), so merging and concatenating differ.
func interleaved(clk *rxtest.Clock) func(int) rx.Observable[int] {
	return func(k int) rx.Observable[int] {
		start := time.Duration(k) * 10 * tick
		return rxtest.Cold(clk,
			rxtest.Next(start, k*10+1), rxtest.Next(start+20*tick, k*10+2), rxtest.Next(start+40*tick, k*10+3),
			rxtest.Completed[int](start+40*tick))
	}
}

func TestSelectManyMergesInnersAsTheyEmit(t *testing.T) {
	clk := rxtest.NewClock()
	rec := rxtest.Record(clk, rx.SelectMany(rx.Of(1, 2), interleaved(clk)))
	clk.Advance(time.Second)
	assert.Equal(t, []int{11, 21, 12, 22, 13, 23}, rec.Values(), "merge, not concat")
	assert.True(t, rec.Completed())
	require.NoError(t, rec.GrammarErr())
}

func TestConcatMapRunsOneInnerAfterTheOther(t *testing.T) {
	// Negative control of the test above: the same inners concatenated.
	clk := rxtest.NewClock()
	rec := rxtest.Record(clk, rx.ConcatMap(rx.Of(1, 2), interleaved(clk)))
	clk.Advance(time.Second)
	assert.Equal(t, []int{11, 12, 13, 21, 22, 23}, rec.Values())
	assert.Equal(t, rxtest.Completed[int](50*tick+60*tick), rec.Events()[6], "the second inner starts when the first completes")
	require.NoError(t, rec.GrammarErr())
}

// goroutineInner emits n values from its own goroutine.
func goroutineInner(k, n int) rx.Observable[int] {
	return rx.Create(func(ctx context.Context, o rx.Observer[int]) {
		go func() {
			for i := 0; i < n && ctx.Err() == nil; i++ {
				o.OnNext(k*n + i)
			}
			o.OnCompleted()
		}()
	})
}

func TestSelectManyAndConcatMapSerialiseInnersFromOtherGoroutines(t *testing.T) {
	for name, op := range map[string]func(rx.Observable[int], func(int) rx.Observable[int]) rx.Observable[int]{
		"SelectMany": rx.SelectMany[int, int],
		"ConcatMap":  rx.ConcatMap[int, int],
	} {
		t.Run(name, func(t *testing.T) {
			rec := rxtest.NewRecorder[int](nil)
			op(rx.Range(0, 20), func(k int) rx.Observable[int] { return goroutineInner(k, 500) }).Subscribe(rec)
			require.True(t, rec.WaitTerminated(10*time.Second))
			require.NoError(t, rec.GrammarErr(), "calls overlapped or came after the end")
			vs := rec.Values()
			assert.Len(t, vs, 20*500)
			seen := make(map[int]bool, len(vs))
			for _, v := range vs {
				seen[v] = true
			}
			assert.Len(t, seen, 20*500, "every value exactly once")
		})
	}
}

func TestConcatMapKeepsTheOrderOfInnersFromOtherGoroutines(t *testing.T) {
	vs, err := rx.Collect(context.Background(), rx.ConcatMap(rx.Range(0, 10), func(k int) rx.Observable[int] { return goroutineInner(k, 100) }))
	require.NoError(t, err)
	for i, v := range vs {
		require.Equal(t, i, v)
	}
}

func TestSelectManyFailsOnTheFirstErrorAndUnsubscribesEverything(t *testing.T) {
	clk := rxtest.NewClock()
	a := rxtest.Cold(clk, rxtest.Next(10*tick, 1), rxtest.Next(50*tick, 2))
	b := rxtest.Cold(clk, rxtest.Error[int](20*tick, rxtest.ErrTest))
	outer := rxtest.Cold(clk, rxtest.Next(0, 0), rxtest.Next(5*tick, 1))
	rec := rxtest.Record(clk, rx.SelectMany[int, int](outer, func(k int) rx.Observable[int] {
		if k == 0 {
			return a
		}
		return b
	}))
	clk.Advance(time.Second)
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(10*tick, 1), rxtest.Error[int](25*tick, rxtest.ErrTest)}, rec.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(0, 25*tick)}, a.Subscriptions())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(0, 25*tick)}, outer.Subscriptions())
	assert.Zero(t, clk.Pending())
}

func TestSelectManyCompletesWhenTheSourceAndEveryInnerHave(t *testing.T) {
	clk := rxtest.NewClock()
	rec := rxtest.Record(clk, rx.SelectMany(rx.Of(1, 2), func(k int) rx.Observable[int] {
		return rx.Map(rx.Timer(time.Duration(k)*100*tick, clk), func(time.Time) int { return k })
	}))
	clk.Advance(150 * tick)
	assert.False(t, rec.Terminated(), "one inner is still running")
	clk.Advance(50 * tick)
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(100*tick, 1), rxtest.Next(200*tick, 2), rxtest.Completed[int](200 * tick)}, rec.Events())
}

func TestAnInnerThatTakesDoesNotEndItsSiblings(t *testing.T) {
	vs, err := rx.Collect(context.Background(), rx.SelectMany(rx.Of(1, 2, 3), func(k int) rx.Observable[int] {
		return rx.Take(rx.Range(k*10, 100), 2)
	}))
	require.NoError(t, err)
	assert.Equal(t, []int{10, 11, 20, 21, 30, 31}, vs)
}

func TestMergeMergesAndCompletesWhenAllHave(t *testing.T) {
	clk := rxtest.NewClock()
	f := interleaved(clk)
	rec := rxtest.Record(clk, rx.Merge(f(1), f(2)))
	clk.Advance(time.Second)
	assert.Equal(t, []int{11, 21, 12, 22, 13, 23}, rec.Values())
	assert.True(t, rec.Completed())
	assert.True(t, rxtest.Record(nil, rx.Merge[int]()).Completed(), "merging nothing completes")
}

func TestSelectManyFailsClearlyWhenTheSelectorReturnsNil(t *testing.T) {
	rec := rxtest.Record(nil, rx.SelectMany(rx.Of(1), func(int) rx.Observable[int] { return nil }))
	require.Error(t, rec.Err())
	assert.Contains(t, rec.Err().Error(), "nil Observable")
}

func TestConcatSubscribesInTurnWithoutGrowingTheStack(t *testing.T) {
	srcs := make([]rx.Observable[int], 200_000)
	for i := range srcs {
		srcs[i] = rx.Return(i)
	}
	vs, err := rx.Collect(context.Background(), rx.Concat(srcs...))
	require.NoError(t, err)
	require.Len(t, vs, len(srcs))
	assert.Equal(t, len(srcs)-1, vs[len(vs)-1])
}

func TestConcatPassesTheFirstErrorOn(t *testing.T) {
	var second atomic.Bool
	rec := rxtest.Record(nil, rx.Concat(rx.Of(1), rx.Throw[int](rxtest.ErrTest), rx.Defer(func() rx.Observable[int] { second.Store(true); return rx.Return(2) })))
	assert.Equal(t, []int{1}, rec.Values())
	assert.ErrorIs(t, rec.Err(), rxtest.ErrTest)
	assert.False(t, second.Load())
}

func TestCombineLatestEmitsOncePairedAndCompletesWhenBothHave(t *testing.T) {
	clk := rxtest.NewClock()
	a := rxtest.Hot(clk, rxtest.Next(210*tick, 1), rxtest.Next(240*tick, 2), rxtest.Completed[int](300*tick))
	b := rxtest.Hot(clk, rxtest.Next(220*tick, "x"), rxtest.Next(250*tick, "y"), rxtest.Completed[string](400*tick))
	res := rxtest.Start(clk, 200*tick, 1000*tick, func() rx.Observable[string] {
		return rx.CombineLatest2[int, string](a, b, func(n int, s string) string { return s + string(rune('0'+n)) })
	})
	assert.Equal(t, []rxtest.Event[string]{
		rxtest.Next(220*tick, "x1"), rxtest.Next(240*tick, "x2"), rxtest.Next(250*tick, "y2"), rxtest.Completed[string](400 * tick),
	}, res.Events())
}

func TestCombineLatestCompletesAtOnceWhenASideEndsEmpty(t *testing.T) {
	rec := rxtest.Record(nil, rx.CombineLatest2(rx.Empty[int](), rx.Never[int](), func(a, b int) int { return a + b }))
	assert.True(t, rec.Completed())
}

func TestCombineLatestIsSafeWithBothSidesOnOtherGoroutines(t *testing.T) {
	rec := rxtest.NewRecorder[int](nil)
	rx.CombineLatest2(goroutineInner(0, 2000), goroutineInner(1, 2000), func(a, b int) int { return a + b }).Subscribe(rec)
	require.True(t, rec.WaitTerminated(10*time.Second))
	require.NoError(t, rec.GrammarErr())
	assert.True(t, rec.Completed())
}

func TestSubjectInputsFromManyGoroutinesReachObserversOneAtATime(t *testing.T) {
	s := rx.NewSubject[int]()
	rec := rxtest.Record[int](nil, s)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				s.OnNext(i)
			}
		}()
	}
	wg.Wait()
	s.OnCompleted()
	s.OnNext(-1)
	require.NoError(t, rec.GrammarErr())
	assert.Len(t, rec.Values(), 8000)
	assert.True(t, rec.Completed())
	assert.False(t, errors.Is(rec.Err(), rxtest.ErrTest))
}
