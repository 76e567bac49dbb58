package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// elementAtSource is Rx.NET ElementAtTest's hot source.
func elementAtSource(clk *rxtest.Clock) *rxtest.TestObservable[int] {
	return rxtest.Hot(clk, rxtest.Next(ms(280), 42), rxtest.Next(ms(360), 43), rxtest.Next(ms(470), 44), rxtest.Completed[int](ms(600)))
}

// Rx.NET ElementAtTest (ElementAt_First, ElementAt_Other): the answer and
// the source's unsubscription at the index's arrival. Negative control:
// without the up.cancel() in verdict.answer the source stayed subscribed to
// 600 (Sub(200, 600)) and the span assertions failed.
func TestElementAtAnswersAtTheIndexAndUnsubscribesTheSourceThen(t *testing.T) {
	for _, tc := range []struct {
		index int
		want  []rxtest.Event[int]
		span  rxtest.Span
	}{
		{0, []rxtest.Event[int]{rxtest.Next(ms(280), 42), rxtest.Completed[int](ms(280))}, rxtest.Sub(ms(200), ms(280))},
		{2, []rxtest.Event[int]{rxtest.Next(ms(470), 44), rxtest.Completed[int](ms(470))}, rxtest.Sub(ms(200), ms(470))},
	} {
		clk := rxtest.NewClock()
		xs := elementAtSource(clk)
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.ElementAt[int](xs, tc.index) })
		assert.Equal(t, tc.want, res.Events(), "index %d", tc.index)
		assert.Equal(t, []rxtest.Span{tc.span}, xs.Subscriptions(), "index %d", tc.index)
	}
}

// Rx.NET ElementAt_OutOfRange: OnError(600, ArgumentOutOfRangeException).
// A negative index fails at subscription, without subscribing (Rx.NET
// throws at the call). Negative control: completing at 600 instead failed
// failedWith's kind check.
func TestElementAtPastTheEndFailsWithAnIndexErrorAndANegativeIndexWithAnArgumentError(t *testing.T) {
	clk := rxtest.NewClock()
	xs := elementAtSource(clk)
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.ElementAt[int](xs, 3) })
	ie := as[*rx.IndexError](t, failedWith(t, res, ms(600), nil))
	assert.Equal(t, rx.IndexError{Op: "ElementAt", Index: 3, Count: 3}, *ie)

	clk = rxtest.NewClock()
	xs = elementAtSource(clk)
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.ElementAt[int](xs, -1) })
	ae := as[*rx.ArgumentError](t, failedWith(t, res, ms(200), nil))
	assert.Equal(t, "index", ae.Arg)
	assert.Empty(t, xs.Subscriptions(), "the source is not subscribed")
}
