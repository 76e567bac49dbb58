package rx_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// windowsOf collects each window's values as a slice, subscribing to the
// window as it opens.
func windowsOf(src rx.Observable[rx.Observable[int]]) rx.Observable[[]int] {
	return rx.SelectMany(src, func(w rx.Observable[int]) rx.Observable[[]int] {
		return rx.Reduce(w, []int{}, func(acc []int, v int) []int { return append(acc, v) })
	})
}

// Rx.NET Window(count) / RxJS windowCount(3): a new window opens as the
// previous takes its third value, so seven values make windows of 3, 3, 1.
// Negative control: six values end with an empty window.
func TestWindowCountSplitsIntoWindowsOfNAndEndsWithTheOpenOne(t *testing.T) {
	vs, err := collect(t, windowsOf(rx.WindowCount(rx.Range(1, 7), 3)))
	require.NoError(t, err)
	assert.Equal(t, [][]int{{1, 2, 3}, {4, 5, 6}, {7}}, vs)
	vs, err = collect(t, windowsOf(rx.WindowCount(rx.Range(1, 6), 3)))
	require.NoError(t, err)
	assert.Equal(t, [][]int{{1, 2, 3}, {4, 5, 6}, {}}, vs, "control")
}

// In virtual time: the windows open when announced, and a window's
// subscribers see its values. Negative control: an error fails the open
// window and the outer stream.
func TestWindowCountOpensEachWindowAsThePreviousFills(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(220), 2), rxtest.Next(ms(230), 3), rxtest.Completed[int](ms(300)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[]int] { return windowsOf(rx.WindowCount[int](xs, 2)) })
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Next(ms(220), []int{1, 2}), rxtest.Next(ms(300), []int{3}),
		rxtest.Completed[[]int](ms(300))}, res.Events())

	clk = rxtest.NewClock()
	ys := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Error[int](ms(250), rxtest.ErrTest))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[]int] { return windowsOf(rx.WindowCount[int](ys, 2)) })
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Error[[]int](ms(250), rxtest.ErrTest)}, res.Events(), "control")
}

func TestWindowCountBelowOneFailsWithAnArgumentError(t *testing.T) {
	_, err := collect(t, rx.WindowCount(rx.Of(1), 0))
	var ae *rx.ArgumentError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, "n", ae.Arg)
}
