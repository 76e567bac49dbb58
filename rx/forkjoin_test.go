package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// forkJoinSources are Rx.NET ForkJoinTest's three hot sources (ForkJoin_Nary).
func forkJoinSources(clk *rxtest.Clock, second ...rxtest.Event[int]) []*rxtest.TestObservable[int] {
	return []*rxtest.TestObservable[int]{
		rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(215), 2), rxtest.Next(ms(225), 4), rxtest.Completed[int](ms(230))),
		rxtest.Hot(clk, second...),
		rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(230), 3), rxtest.Next(ms(245), 5), rxtest.Completed[int](ms(270))),
	}
}

// Rx.NET ForkJoinTest.ForkJoin_Nary: the last values at 270, when the last
// source completes. Negative control, ForkJoin_NaryParamsEmptyBeforeEnd: the
// second source completing without a value at 235 ends the stream there,
// with none, and unsubscribes the third.
func TestForkJoinEmitsTheLastValueOfEachWhenAllHaveCompleted(t *testing.T) {
	clk := rxtest.NewClock()
	xs := forkJoinSources(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(235), 6), rxtest.Next(ms(240), 7), rxtest.Completed[int](ms(250)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[]int] { return rx.ForkJoin[int](xs[0], xs[1], xs[2]) })
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Next(ms(270), []int{4, 7, 5}), rxtest.Completed[[]int](ms(270))}, res.Events())

	clk = rxtest.NewClock()
	xs = forkJoinSources(clk, rxtest.Completed[int](ms(235)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[]int] { return rx.ForkJoin[int](xs[0], xs[1], xs[2]) })
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Completed[[]int](ms(235))}, res.Events(), "control")
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(235))}, xs[2].Subscriptions())
}

// Rx.NET ForkJoin_Nary_Immediate; and no sources complete at once with no
// value (RxJS forkJoin([])). Negative control: the two differ.
func TestForkJoinOfSynchronousSourcesAndOfNone(t *testing.T) {
	vs, err := collect(t, rx.ForkJoin(rx.Return(1), rx.Return(2)))
	assert.NoError(t, err)
	assert.Equal(t, [][]int{{1, 2}}, vs)
	vs, err = collect(t, rx.ForkJoin[int]())
	assert.NoError(t, err)
	assert.Empty(t, vs)
}

// The first error ends the stream. Negative control: the error replaced by
// a completion gives the values.
func TestForkJoinFailsWithTheFirstError(t *testing.T) {
	_, err := collect(t, rx.ForkJoin(rx.Return(1), rx.Throw[int](rxtest.ErrTest)))
	assert.ErrorIs(t, err, rxtest.ErrTest)
	vs, err := collect(t, rx.ForkJoin(rx.Return(1), rx.Return(2)))
	assert.NoError(t, err, "control")
	assert.Len(t, vs, 1)
}
