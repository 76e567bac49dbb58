package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET CombineLatestTest's N-ary cases: once all three have
// emitted, every value emits the latest of all, in source order; the
// stream completes when all have. Negative control: a source that
// completes without a value ends the stream at once, with none.
func TestCombineLatestEmitsTheLatestOfAllOnceEachHasEmitted(t *testing.T) {
	clk := rxtest.NewClock()
	a := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(240), 4), rxtest.Completed[int](ms(300)))
	b := rxtest.Hot(clk, rxtest.Next(ms(220), 2), rxtest.Completed[int](ms(250)))
	c := rxtest.Hot(clk, rxtest.Next(ms(230), 3), rxtest.Next(ms(260), 6), rxtest.Completed[int](ms(400)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[]int] { return rx.CombineLatest[int](a, b, c) })
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Next(ms(230), []int{1, 2, 3}), rxtest.Next(ms(240), []int{4, 2, 3}),
		rxtest.Next(ms(260), []int{4, 2, 6}), rxtest.Completed[[]int](ms(400))}, res.Events())

	clk = rxtest.NewClock()
	a = rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Completed[int](ms(300)))
	b = rxtest.Hot(clk, rxtest.Completed[int](ms(250)))
	c = rxtest.Hot(clk, rxtest.Next(ms(230), 3), rxtest.Completed[int](ms(400)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[]int] { return rx.CombineLatest[int](a, b, c) })
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Completed[[]int](ms(250))}, res.Events(), "control")
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(250))}, c.Subscriptions())
}

// Each emitted slice is the receiver's: a later combination does not write
// into it. Negative control: the slices differ, so sharing one would show.
func TestCombineLatestHandsOutAFreshSliceEachTime(t *testing.T) {
	vs, err := collect(t, rx.CombineLatest(rx.Of(1), rx.Of(2, 3)))
	assert.NoError(t, err)
	assert.Equal(t, [][]int{{1, 2}, {1, 3}}, vs)
}

func TestCombineLatestOfNoSourcesCompletesAtOnce(t *testing.T) {
	vs, err := collect(t, rx.CombineLatest[int]())
	assert.NoError(t, err)
	assert.Empty(t, vs)
}
