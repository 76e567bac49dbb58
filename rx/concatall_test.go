package rx_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// twoOverlapping is an outer stream of two cold inners that would overlap
// if both ran at once (after Rx.NET's ConcatTest / MergeTest shapes).
func twoOverlapping(clk *rxtest.Clock) (rx.Observable[rx.Observable[int]], *rxtest.TestObservable[int]) {
	y1 := rxtest.Cold(clk, rxtest.Next(ms(10), 101), rxtest.Next(ms(30), 102), rxtest.Completed[int](ms(40)))
	y2 := rxtest.Cold(clk, rxtest.Next(ms(5), 201), rxtest.Next(ms(20), 202), rxtest.Completed[int](ms(25)))
	xs := rxtest.Hot[rx.Observable[int]](clk, rxtest.Next[rx.Observable[int]](ms(210), y1),
		rxtest.Next[rx.Observable[int]](ms(220), y2), rxtest.Completed[rx.Observable[int]](ms(230)))
	return xs, y2
}

// ConcatAll runs the second inner after the first has completed. Negative
// control: MergeAll over the same outer interleaves them.
func TestConcatAllRunsEachInnerAfterThePreviousHasCompleted(t *testing.T) {
	clk := rxtest.NewClock()
	xs, y2 := twoOverlapping(clk)
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.ConcatAll(xs) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(220), 101), rxtest.Next(ms(240), 102),
		rxtest.Next(ms(255), 201), rxtest.Next(ms(270), 202), rxtest.Completed[int](ms(275))}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(250), ms(275))}, y2.Subscriptions())

	clk = rxtest.NewClock()
	xs, _ = twoOverlapping(clk)
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.MergeAll(xs) })
	assert.Equal(t, []int{101, 201, 102, 202}, res.Values(), "control: merged")
}

// The waiting inners are bounded by QueueLimit. Negative control: exactly
// QueueLimit waiting behind a running one is accepted.
func TestConcatAllFailsWhenMoreThanQueueLimitInnersWait(t *testing.T) {
	inners := func(n int) rx.Observable[rx.Observable[int]] {
		return rx.Map(rx.Range(0, n), func(int) rx.Observable[int] { return rx.Never[int]() })
	}
	rec := rxtest.Record(nil, rx.ConcatAll(inners(rx.QueueLimit+2)))
	var oe *rx.OverflowError
	require.True(t, errors.As(rec.Err(), &oe), "got %v", rec.Err())
	assert.Equal(t, "ConcatAll", oe.Op)
	ctl := rxtest.Record(nil, rx.ConcatAll(inners(rx.QueueLimit+1)))
	assert.False(t, ctl.Terminated(), "control")
	ctl.Unsubscribe()
}

// A nil inner is an error value, not a panic. Negative control: a non-nil
// one completes.
func TestConcatAllFailsOnANilInner(t *testing.T) {
	_, err := collect(t, rx.ConcatAll(rx.Of[rx.Observable[int]](nil)))
	require.Error(t, err)
	vs, err := collect(t, rx.ConcatAll(rx.Of(rx.Of(1, 2), rx.Of(3))))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3}, vs)
}
