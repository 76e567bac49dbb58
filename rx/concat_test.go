package rx_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestConcatMapRunsOneInnerAfterTheOther(t *testing.T) {
	// Negative control of the test above: the same inners concatenated.
	clk := rxtest.NewClock()
	rec := rxtest.Record(clk, rx.ConcatMap(rx.Of(1, 2), interleaved(clk)))
	clk.Advance(time.Second)
	assert.Equal(t, []int{11, 12, 13, 21, 22, 23}, rec.Values())
	assert.Equal(t, rxtest.Completed[int](50*tick+60*tick), rec.Events()[6], "the second inner starts when the first completes")
	require.NoError(t, rec.GrammarErr())
}

func TestConcatMapKeepsTheOrderOfInnersFromOtherGoroutines(t *testing.T) {
	vs, err := rx.Collect(context.Background(), rx.ConcatMap(rx.Range(0, 10), func(k int) rx.Observable[int] { return goroutineInner(k, 100) }))
	require.NoError(t, err)
	for i, v := range vs {
		require.Equal(t, i, v)
	}
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
