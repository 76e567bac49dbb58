package rx_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET DistinctTest's key-selector cases (Distinct_KeySelector_*:
// their shape, keys x / 2; expectations derived here): a value passes when
// its key is new, at its own time. Negative control: keying by the value
// instead of key(v) let 5 and 3 through.
func TestDistinctByForwardsTheFirstValueOfEachKey(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(280), 4), rxtest.Next(ms(300), 2), rxtest.Next(ms(350), 1),
		rxtest.Next(ms(380), 5), rxtest.Next(ms(400), 3), rxtest.Next(ms(420), 7), rxtest.Completed[int](ms(500)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] {
		return rx.DistinctBy[int](xs, func(v int) int { return v / 2 })
	})
	assert.Equal(t, []rxtest.Event[int]{
		rxtest.Next(ms(280), 4), rxtest.Next(ms(300), 2), rxtest.Next(ms(350), 1),
		rxtest.Next(ms(420), 7), rxtest.Completed[int](ms(500)),
	}, res.Events())
}

// A NaN key is treated as Distinct treats a NaN value: the first passes,
// the map keeps none. Negative control: without the k != k branch every
// NaN-keyed value passed and the map grew by one per value.
func TestDistinctByPassesOneValueWithANaNKey(t *testing.T) {
	vs, err := collect(t, rx.DistinctBy(rx.Of(1, 2, 3), func(int) float64 { return math.NaN() }))
	require.NoError(t, err)
	assert.Equal(t, []int{1}, vs)
}
