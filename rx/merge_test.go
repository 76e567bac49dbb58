package rx_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestSelectManyMergesInnersAsTheyEmit(t *testing.T) {
	clk := rxtest.NewClock()
	rec := rxtest.Record(clk, rx.SelectMany(rx.Of(1, 2), interleaved(clk)))
	clk.Advance(time.Second)
	assert.Equal(t, []int{11, 21, 12, 22, 13, 23}, rec.Values(), "merge, not concat")
	assert.True(t, rec.Completed())
	require.NoError(t, rec.GrammarErr())
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
