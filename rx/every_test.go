package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET AllTest (All_Some, All_SomeNone, All_Empty) — RxJS every agrees:
// false at the first failing value, short-circuiting (Subscribe(200, 230),
// the predicate not asked again), true at completion, also for an empty
// source. Negative control: answering false only at completion gave
// OnNext(250, false), Sub(200, 250) and 4 calls.
func TestEveryShortCircuitsFalseAtTheFirstFailingValue(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(220), 3),
		rxtest.Next(ms(230), -4), rxtest.Next(ms(240), 5), rxtest.Completed[int](ms(250)))
	calls := 0
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[bool] {
		return rx.Every[int](xs, func(v int) bool { calls++; return v > 0 })
	})
	assert.Equal(t, []rxtest.Event[bool]{rxtest.Next(ms(230), false), rxtest.Completed[bool](ms(230))}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(230))}, xs.Subscriptions())
	assert.Equal(t, 3, calls)

	clk = rxtest.NewClock()
	ys := rxtest.Hot(clk, rxtest.Next(ms(210), 2), rxtest.Next(ms(220), 3), rxtest.Completed[int](ms(250)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[bool] {
		return rx.Every[int](ys, func(v int) bool { return v > 0 })
	})
	assert.Equal(t, []rxtest.Event[bool]{rxtest.Next(ms(250), true), rxtest.Completed[bool](ms(250))}, res.Events())

	vs, err := collect(t, rx.Every(rx.Empty[int](), func(int) bool { return false }))
	assert.NoError(t, err)
	assert.Equal(t, []bool{true}, vs, "vacuously true")
}
