package rx_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET LastAsyncTest (LastAsync_NonEmpty, _Empty, _Error): the vectors
// ported. Negative control: emitting the first value instead of the last
// (keeping last only when !has) gave OnNext(250, 2) and failed the first
// case; answering an empty source with OnCompleted failed the second.
func TestLastEmitsTheLastValueAtCompletionAndFailsOnAnEmptyStream(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(220), 3), rxtest.Completed[int](ms(250)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Last[int](xs) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(250), 3), rxtest.Completed[int](ms(250))}, res.Events())

	clk = rxtest.NewClock()
	empty := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Completed[int](ms(250)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Last[int](empty) })
	err := failedWith(t, res, ms(250), nil)
	assert.ErrorIs(t, err, rx.ErrEmpty)
	assert.Equal(t, "Last", as[*rx.SequenceError](t, err).Op)
	assert.Equal(t, "rx.Last: the stream completed without a value", err.Error())

	clk = rxtest.NewClock()
	bad := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(205), 2), rxtest.Error[int](ms(210), rxtest.ErrTest))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Last[int](bad) })
	assert.True(t, errors.Is(failedWith(t, res, ms(210), nil), rxtest.ErrTest), "the source's error, not the held value")
}
