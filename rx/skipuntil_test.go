package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET SkipUntilTest (SkipUntil_SomeData_Next, _SomeData_Error,
// _SomeData_Empty): the values from the signal's first value on, the
// signal's error ends the stream, a signal that completes empty lets
// nothing through (the source's completion still ends it). Negative
// control: opening the gate at the signal's completion let 4 and 5 through
// in the third case.
func TestSkipUntilForwardsFromTheSignalsFirstValue(t *testing.T) {
	left := func(clk *rxtest.Clock) *rxtest.TestObservable[int] {
		return rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(220), 3),
			rxtest.Next(ms(230), 4), rxtest.Next(ms(240), 5), rxtest.Completed[int](ms(250)))
	}
	for _, tc := range []struct {
		name  string
		right []rxtest.Event[int]
		want  []rxtest.Event[int]
	}{
		{"next", []rxtest.Event[int]{rxtest.Next(ms(150), 1), rxtest.Next(ms(225), 99), rxtest.Completed[int](ms(230))},
			[]rxtest.Event[int]{rxtest.Next(ms(230), 4), rxtest.Next(ms(240), 5), rxtest.Completed[int](ms(250))}},
		{"error", []rxtest.Event[int]{rxtest.Next(ms(150), 1), rxtest.Error[int](ms(225), rxtest.ErrTest)},
			[]rxtest.Event[int]{rxtest.Error[int](ms(225), rxtest.ErrTest)}},
		{"empty", []rxtest.Event[int]{rxtest.Next(ms(150), 1), rxtest.Completed[int](ms(225))},
			[]rxtest.Event[int]{rxtest.Completed[int](ms(250))}},
	} {
		clk := rxtest.NewClock()
		l, r := left(clk), rxtest.Hot(clk, tc.right...)
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.SkipUntil[int, int](l, r) })
		assert.Equal(t, tc.want, res.Events(), tc.name)
		if tc.name == "next" {
			assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(225))}, r.Subscriptions(), "the signal is unsubscribed once it has spoken")
		}
	}
}
