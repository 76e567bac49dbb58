package rx_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET AverageTest (Average_Int32_Some, _Empty): the mean as a double at
// completion (int values 3, 1, 2, 4 give 2.5, not 2), an empty source fails
// (InvalidOperationException; here a *SequenceError wrapping ErrEmpty).
// Negative control: integer division in Average gave 2.
func TestAverageEmitsTheFloatMeanAndFailsOnAnEmptyStream(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 3), rxtest.Next(ms(220), 1),
		rxtest.Next(ms(230), 2), rxtest.Next(ms(240), 4), rxtest.Completed[int](ms(250)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[float64] { return rx.Average[int](xs) })
	assert.Equal(t, []rxtest.Event[float64]{rxtest.Next(ms(250), 2.5), rxtest.Completed[float64](ms(250))}, res.Events())

	_, err := collect(t, rx.Average(rx.Empty[uint8]()))
	assert.ErrorIs(t, err, rx.ErrEmpty)
	assert.Equal(t, "Average", as[*rx.SequenceError](t, err).Op)

	f, err := collect(t, rx.Average(rx.Of(1, math.NaN())))
	require.NoError(t, err)
	require.Len(t, f, 1)
	assert.True(t, math.IsNaN(f[0]))
}
