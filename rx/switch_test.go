package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Ported from Rx.NET SwitchTest.Switch_Data (as SwitchMap's test): the
// outer emits the inners themselves. Negative control: MergeAll over the
// same outer keeps the replaced inners' values (103, 104, ...).
func TestSwitchMirrorsTheLatestInnerAndCompletesAfterIt(t *testing.T) {
	build := func(clk *rxtest.Clock) (rx.Observable[rx.Observable[int]], []*rxtest.TestObservable[int]) {
		ys := []*rxtest.TestObservable[int]{
			rxtest.Cold(clk, rxtest.Next(ms(10), 101), rxtest.Next(ms(20), 102), rxtest.Next(ms(110), 103),
				rxtest.Next(ms(120), 104), rxtest.Next(ms(210), 105), rxtest.Next(ms(220), 106), rxtest.Completed[int](ms(230))),
			rxtest.Cold(clk, rxtest.Next(ms(10), 201), rxtest.Next(ms(20), 202), rxtest.Next(ms(30), 203),
				rxtest.Next(ms(40), 204), rxtest.Completed[int](ms(50))),
			rxtest.Cold(clk, rxtest.Next(ms(10), 301), rxtest.Next(ms(20), 302), rxtest.Next(ms(30), 303),
				rxtest.Next(ms(40), 304), rxtest.Completed[int](ms(150))),
		}
		type O = rx.Observable[int]
		xs := rxtest.Hot[O](clk, rxtest.Next[O](ms(300), ys[0]), rxtest.Next[O](ms(400), ys[1]),
			rxtest.Next[O](ms(500), ys[2]), rxtest.Completed[O](ms(600)))
		return xs, ys
	}
	clk := rxtest.NewClock()
	xs, ys := build(clk)
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Switch(xs) })
	assert.Equal(t, []rxtest.Event[int]{
		rxtest.Next(ms(310), 101), rxtest.Next(ms(320), 102),
		rxtest.Next(ms(410), 201), rxtest.Next(ms(420), 202), rxtest.Next(ms(430), 203), rxtest.Next(ms(440), 204),
		rxtest.Next(ms(510), 301), rxtest.Next(ms(520), 302), rxtest.Next(ms(530), 303), rxtest.Next(ms(540), 304),
		rxtest.Completed[int](ms(650)),
	}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(300), ms(400))}, ys[0].Subscriptions())

	clk = rxtest.NewClock()
	xs, _ = build(clk)
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.MergeAll(xs) })
	assert.Contains(t, res.Values(), 103, "control: merged, the first inner is not replaced")
}
