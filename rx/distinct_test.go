package rx_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET DistinctTest's default-comparer cases (a short vector of its
// shape; expectations derived here).
func TestDistinctForwardsEachValueTheFirstTimeOnly(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(280), 4), rxtest.Next(ms(300), 2), rxtest.Next(ms(350), 4),
		rxtest.Next(ms(380), 3), rxtest.Next(ms(400), 2), rxtest.Completed[int](ms(420)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Distinct[int](xs) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(280), 4), rxtest.Next(ms(300), 2),
		rxtest.Next(ms(380), 3), rxtest.Completed[int](ms(420))}, res.Events())
}

func TestDistinctIsNotDistinctUntilChanged(t *testing.T) {
	vs, err := collect(t, rx.Distinct(rx.Of("a", "b", "a")))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, vs)
	vs, err = collect(t, rx.DistinctUntilChanged(rx.Of("a", "b", "a")))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "a"}, vs, "control: only adjacent duplicates are dropped there")
}

// Issue 19 §10. Negative control: without the NaN case in
// distinctSetObserver.OnNext every NaN is a new map key, and this stream
// emits all four NaNs (the test was run so before the fix: it failed with
// five values).
func TestDistinctEmitsNaNOnceAsRxNETDoes(t *testing.T) {
	nan := math.NaN()
	vs, err := collect(t, rx.Distinct(rx.Of(nan, 1, nan, math.NaN(), 1, nan)))
	require.NoError(t, err)
	require.Len(t, vs, 2)
	assert.True(t, math.IsNaN(vs[0]))
	assert.Equal(t, 1.0, vs[1])

	type point struct{ X, Y float64 }
	ps, err := collect(t, rx.Distinct(rx.Of(point{nan, 1}, point{nan, 1}, point{1, 1})))
	require.NoError(t, err)
	assert.Len(t, ps, 2, "a struct holding a NaN is not equal to itself either")
}
