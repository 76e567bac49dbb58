package rx_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET MinTest/MaxTest (Min_Int32_Some, Max_Int32_Some, _Empty): the
// extreme at completion; an empty source fails with InvalidOperationException
// — here a *SequenceError wrapping ErrEmpty. Negative control: swapping the
// comparison in extremeObserver gave Min 4 and Max 2.
func TestMinAndMaxEmitTheExtremeAtCompletionAndFailOnAnEmptyStream(t *testing.T) {
	script := func(clk *rxtest.Clock) *rxtest.TestObservable[int] {
		return rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 3), rxtest.Next(ms(220), 2),
			rxtest.Next(ms(230), 4), rxtest.Completed[int](ms(250)))
	}
	clk := rxtest.NewClock()
	xs := script(clk)
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Min[int](xs) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(250), 2), rxtest.Completed[int](ms(250))}, res.Events())
	clk = rxtest.NewClock()
	xs = script(clk)
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Max[int](xs) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(250), 4), rxtest.Completed[int](ms(250))}, res.Events())

	for name, op := range map[string]func(rx.Observable[int]) rx.Observable[int]{"Min": rx.Min[int], "Max": rx.Max[int]} {
		clk := rxtest.NewClock()
		empty := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Completed[int](ms(250)))
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return op(empty) })
		err := failedWith(t, res, ms(250), nil)
		assert.ErrorIs(t, err, rx.ErrEmpty, name)
		assert.Equal(t, name, as[*rx.SequenceError](t, err).Op)
	}
}

// Strings and floats order as cmp.Compare orders them: a NaN is below every
// number. Negative control: with < instead of cmp.Less, Min over the floats
// depended on where the NaN stood (-1 here).
func TestMinAndMaxOrderAsCmpCompareDoesNaNIncluded(t *testing.T) {
	s, err := collect(t, rx.Min(rx.Of("pear", "apple", "fig")))
	require.NoError(t, err)
	assert.Equal(t, []string{"apple"}, s)
	f, err := collect(t, rx.Min(rx.Of(1, math.NaN(), -1)))
	require.NoError(t, err)
	require.Len(t, f, 1)
	assert.True(t, math.IsNaN(f[0]))
	f, err = collect(t, rx.Max(rx.Of(math.NaN(), 1, -1)))
	require.NoError(t, err)
	assert.Equal(t, []float64{1}, f)
}
