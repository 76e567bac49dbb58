package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET IgnoreElementsTest (IgnoreValues_Basic, _Completed, _Error): only
// the ending, at its time. Negative control: forwarding OnNext failed both.
func TestIgnoreElementsForwardsOnlyTheEnding(t *testing.T) {
	for _, end := range []rxtest.Event[int]{rxtest.Completed[int](ms(610)), rxtest.Error[int](ms(610), rxtest.ErrTest)} {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(ms(180), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(250), 3),
			rxtest.Next(ms(270), 4), rxtest.Next(ms(310), 5), end)
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.IgnoreElements[int](xs) })
		assert.Equal(t, []rxtest.Event[int]{end}, res.Events())
	}
}
