package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET SingleAsyncTest (SingleAsync_One, _Many, _Empty): one value is
// emitted at completion; a second fails at once, unsubscribing the source
// (Subscribe(200, 220)); none fails at completion. Negative control: waiting
// for completion before failing on the second value gave OnError(250) and
// Sub(200, 250).
func TestSingleFailsAtTheSecondValueAndOnAnEmptyStream(t *testing.T) {
	clk := rxtest.NewClock()
	one := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), rxtest.Completed[int](ms(250)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Single[int](one) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(250), 2), rxtest.Completed[int](ms(250))}, res.Events())

	clk = rxtest.NewClock()
	many := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(220), 3), rxtest.Completed[int](ms(250)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Single[int](many) })
	err := failedWith(t, res, ms(220), nil)
	assert.ErrorIs(t, err, rx.ErrMoreThanOne)
	assert.Equal(t, "Single", as[*rx.SequenceError](t, err).Op)
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(220))}, many.Subscriptions())

	clk = rxtest.NewClock()
	empty := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Completed[int](ms(250)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Single[int](empty) })
	assert.ErrorIs(t, failedWith(t, res, ms(250), nil), rx.ErrEmpty)
}
