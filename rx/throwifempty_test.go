package rx_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

var errNothingFound = errors.New("not found")

// RxJS throwIfEmpty's marbles ('----|' → '----#'; '--a--|' unchanged) in
// virtual time: errf's error at the completion of an empty stream, and errf
// not called otherwise. Negative control: calling errf when a value was
// seen made calls 1 in the second case.
func TestThrowIfEmptyFailsAnEmptyStreamWithTheFactorysError(t *testing.T) {
	calls := 0
	errf := func() error { calls++; return errNothingFound }
	clk := rxtest.NewClock()
	empty := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Completed[int](ms(250)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.ThrowIfEmpty[int](empty, errf) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Error[int](ms(250), errNothingFound)}, res.Events())
	assert.Equal(t, 1, calls)

	calls = 0
	clk = rxtest.NewClock()
	one := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Completed[int](ms(250)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.ThrowIfEmpty[int](one, errf) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(210), 1), rxtest.Completed[int](ms(250))}, res.Events())
	assert.Zero(t, calls)

	_, err := collect(t, rx.ThrowIfEmpty(rx.Empty[int](), func() error { return nil }))
	assert.ErrorIs(t, err, rx.ErrNilError, "a nil error is never success")
}
