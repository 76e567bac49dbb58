package rx_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET ContainsTest (Contains_ReturnPositive, Contains_SomeNegative,
// Contains_Empty): true at the first equal value (Subscribe(200, 210)),
// false at completion. Negative control: answering only at completion gave
// OnNext(250, true) and failed the first case.
func TestContainsAnswersTrueAtTheFirstEqualValueAndFalseAtCompletion(t *testing.T) {
	for _, tc := range []struct {
		v    int
		want []rxtest.Event[bool]
		span rxtest.Span
	}{
		{2, []rxtest.Event[bool]{rxtest.Next(ms(210), true), rxtest.Completed[bool](ms(210))}, rxtest.Sub(ms(200), ms(210))},
		{-2, []rxtest.Event[bool]{rxtest.Next(ms(250), false), rxtest.Completed[bool](ms(250))}, rxtest.Sub(ms(200), ms(250))},
	} {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(220), 3), rxtest.Completed[int](ms(250)))
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[bool] { return rx.Contains[int](xs, tc.v) })
		assert.Equal(t, tc.want, res.Events(), "v=%d", tc.v)
		assert.Equal(t, []rxtest.Span{tc.span}, xs.Subscriptions(), "v=%d", tc.v)
	}
	vs, err := collect(t, rx.Contains(rx.Empty[int](), 1))
	assert.NoError(t, err)
	assert.Equal(t, []bool{false}, vs)
	vs, _ = collect(t, rx.Contains(rx.Of(math.NaN()), math.NaN()))
	assert.Equal(t, []bool{false}, vs, "== never finds a NaN")
}
