package rx_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET RepeatTest (Repeat_Observable_RepeatCount_Basic, _Error): the
// runs one after the other, each subscribed when the previous completed,
// an error at once. Negative control: completing after the first run
// (the count ignored) ended at 220 with one span.
func TestRepeatRunsTheSourceCountTimesInTurn(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Cold(clk, rxtest.Next(ms(5), 1), rxtest.Next(ms(10), 2), rxtest.Next(ms(15), 3), rxtest.Completed[int](ms(20)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Repeat[int](xs, 3) })
	assert.Equal(t, []rxtest.Event[int]{
		rxtest.Next(ms(205), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(215), 3),
		rxtest.Next(ms(225), 1), rxtest.Next(ms(230), 2), rxtest.Next(ms(235), 3),
		rxtest.Next(ms(245), 1), rxtest.Next(ms(250), 2), rxtest.Next(ms(255), 3),
		rxtest.Completed[int](ms(260)),
	}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(220)), rxtest.Sub(ms(220), ms(240)), rxtest.Sub(ms(240), ms(260))}, xs.Subscriptions())

	clk = rxtest.NewClock()
	bad := rxtest.Cold(clk, rxtest.Next(ms(100), 1), rxtest.Next(ms(150), 2), rxtest.Error[int](ms(250), rxtest.ErrTest))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Repeat[int](bad, 3) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(300), 1), rxtest.Next(ms(350), 2), rxtest.Error[int](ms(450), rxtest.ErrTest)}, res.Events())
}

// count <= 0 completes without subscribing (RxJS; Rx.NET's Repeat(0)); a
// synchronous source repeated 1e5 times does not grow the stack, and an
// endless repeat stops when its subscriber does. Negative control:
// resubscribing from OnCompleted (no wip loop) made the last run's
// subscription thousands of frames deeper than the second's.
func TestRepeatOfASynchronousSourceDoesNotGrowTheStackAndStopsWhenUnsubscribed(t *testing.T) {
	var subs atomic.Int64
	counted := rx.Defer(func() rx.Observable[int] { subs.Add(1); return rx.Return(1) })
	for _, n := range []int{0, -1, math.MinInt} {
		vs, err := collect(t, rx.Repeat(counted, n))
		require.NoError(t, err)
		assert.Empty(t, vs)
	}
	assert.Zero(t, subs.Load(), "count <= 0 does not subscribe")

	var depths []int
	deep := rx.Defer(func() rx.Observable[int] { depths = append(depths, stackDepth()); return rx.Of(1, 2) })
	vs, err := collect(t, rx.Repeat(deep, 10_000))
	require.NoError(t, err)
	assert.Len(t, vs, 20_000)
	assert.Equal(t, depths[1], depths[len(depths)-1], "the last run is subscribed as deep as the second")

	vs, err = rx.Collect(context.Background(), rx.Take(rx.Repeat(counted, math.MaxInt), 5))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 1, 1, 1, 1}, vs)
	assert.Equal(t, int64(5), subs.Load(), "no run after the subscriber left")
}
