package rx_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET SumTest (Sum_Int32_Empty, _Some, _Overflow): 0 for an empty
// source, the sum at completion, and checked integer arithmetic: the value
// that overflows fails the stream at its arrival (OverflowException there;
// *ArithmeticOverflowError here) and unsubscribes the source. Negative
// control: without the check the int8 sum wrapped to -128 and completed.
func TestSumIsCheckedIntegerAdditionAndZeroForAnEmptyStream(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(220), 3),
		rxtest.Next(ms(230), 4), rxtest.Completed[int](ms(250)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Sum[int](xs) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(250), 9), rxtest.Completed[int](ms(250))}, res.Events())

	vs, err := collect(t, rx.Sum(rx.Empty[int]()))
	require.NoError(t, err)
	assert.Equal(t, []int{0}, vs)

	clk = rxtest.NewClock()
	big := rxtest.Hot(clk, rxtest.Next[int8](ms(210), 100), rxtest.Next[int8](ms(220), 27),
		rxtest.Next[int8](ms(230), -1), rxtest.Completed[int8](ms(250)))
	ok := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int8] { return rx.Sum[int8](big) })
	assert.Equal(t, []rxtest.Event[int8]{rxtest.Next[int8](ms(250), 126), rxtest.Completed[int8](ms(250))}, ok.Events(), "127 is reached, not passed")

	clk = rxtest.NewClock()
	over := rxtest.Hot(clk, rxtest.Next[int8](ms(210), 100), rxtest.Next[int8](ms(220), 27), rxtest.Next[int8](ms(225), 1),
		rxtest.Completed[int8](ms(250)))
	res8 := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int8] { return rx.Sum[int8](over) })
	oe := as[*rx.ArithmeticOverflowError](t, failedWith(t, res8, ms(225), nil))
	assert.Equal(t, rx.ArithmeticOverflowError{Op: "Sum", Type: "int8"}, *oe)
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(225))}, over.Subscriptions())

	_, err = collect(t, rx.Sum(rx.Of[uint](math.MaxUint, 1)))
	as[*rx.ArithmeticOverflowError](t, err)
	_, err = collect(t, rx.Sum(rx.Of(math.MinInt, -1)))
	as[*rx.ArithmeticOverflowError](t, err)
	f, err := collect(t, rx.Sum(rx.Of(math.MaxFloat64, math.MaxFloat64)))
	require.NoError(t, err)
	assert.Equal(t, []float64{math.Inf(1)}, f, "floats follow IEEE 754")
}
