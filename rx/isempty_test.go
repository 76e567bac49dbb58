package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET IsEmptyTest (IsEmpty_Empty, IsEmpty_Return, IsEmpty_Throw):
// false at the first value (Subscribe(200, 210)), true at completion, the
// error passed on. Negative control: answering at completion only gave
// OnNext(250, false) and Sub(200, 250).
func TestIsEmptyAnswersFalseAtTheFirstValueAndTrueAtCompletion(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), rxtest.Completed[int](ms(250)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[bool] { return rx.IsEmpty[int](xs) })
	assert.Equal(t, []rxtest.Event[bool]{rxtest.Next(ms(210), false), rxtest.Completed[bool](ms(210))}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(210))}, xs.Subscriptions())

	clk = rxtest.NewClock()
	empty := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Completed[int](ms(250)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[bool] { return rx.IsEmpty[int](empty) })
	assert.Equal(t, []rxtest.Event[bool]{rxtest.Next(ms(250), true), rxtest.Completed[bool](ms(250))}, res.Events())

	clk = rxtest.NewClock()
	bad := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Error[int](ms(210), rxtest.ErrTest))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[bool] { return rx.IsEmpty[int](bad) })
	assert.Equal(t, []rxtest.Event[bool]{rxtest.Error[bool](ms(210), rxtest.ErrTest)}, res.Events())
}
