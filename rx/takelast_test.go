package rx_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET TakeLastTest's _Completed cases (a short vector of their
// shape; expectations derived here).
func TestTakeLastEmitsTheLastValuesAtCompletion(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []int
	}{{0, nil}, {-1, nil}, {3, []int{7, 8, 9}}, {10, []int{5, 6, 7, 8, 9}}} {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk,
			rxtest.Next(ms(180), 1), rxtest.Next(ms(210), 5), rxtest.Next(ms(250), 6),
			rxtest.Next(ms(270), 7), rxtest.Next(ms(290), 8), rxtest.Next(ms(310), 9),
			rxtest.Completed[int](ms(350)))
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.TakeLast[int](xs, tc.n) })
		var want []rxtest.Event[int]
		for _, v := range tc.want {
			want = append(want, rxtest.Next(ms(350), v))
		}
		want = append(want, rxtest.Completed[int](ms(350)))
		assert.Equal(t, want, res.Events(), "n=%d", tc.n)
	}
}

func TestTakeLastDropsItsValuesOnError(t *testing.T) {
	vs, err := collect(t, rx.TakeLast(rx.Concat(rx.Of(1, 2), rx.Throw[int](rxtest.ErrTest)), 2))
	assert.Empty(t, vs)
	assert.ErrorIs(t, err, rxtest.ErrTest)
}

func TestTakeLastHoldsOnlyNValuesAndSizesItsRingByTheValuesSeen(t *testing.T) {
	// A huge n must not allocate a huge ring up front.
	vs, err := collect(t, rx.TakeLast(rx.Range(0, 1e5), math.MaxInt))
	require.NoError(t, err)
	assert.Len(t, vs, 1e5)
	allocs := testing.AllocsPerRun(5, func() {
		rx.TakeLast(rx.Range(0, 1e5), 2).Subscribe(rx.NewObserver[int](nil, nil, nil))
	})
	assert.Less(t, allocs, 10.0, "a ring of 2 values, not a growing list")
}

func TestTakeLastStopsWhenTheSubscriberUnsubscribesDuringTheReplay(t *testing.T) {
	vs, err := collect(t, rx.Take(rx.TakeLast(rx.Range(0, 100), 10), 2))
	require.NoError(t, err)
	assert.Equal(t, []int{90, 91}, vs)
}
