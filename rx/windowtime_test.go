package rx_test

import (
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The hot source of RxJS 4's "BufferWithTime Basic" / Rx.NET's
// Window_Time_Basic shape, in windows of 100 from subscription at 200: each
// window holds what arrived in it and completes at its end; the last closes
// with the source. Negative control: windows of 50 split the same values
// finer.
func TestWindowTimeSplitsIntoConsecutiveWindowsOfD(t *testing.T) {
	run := func(d time.Duration) []rxtest.Event[[]int] {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(ms(100), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(240), 3),
			rxtest.Next(ms(280), 4), rxtest.Next(ms(320), 5), rxtest.Next(ms(350), 6), rxtest.Next(ms(380), 7),
			rxtest.Next(ms(420), 8), rxtest.Next(ms(470), 9), rxtest.Completed[int](ms(600)))
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[]int] { return windowsOf(rx.WindowTime[int](xs, d, clk)) })
		assert.Zero(t, clk.Pending(), "the timer stops at the end")
		return res.Events()
	}
	assert.Equal(t, []rxtest.Event[[]int]{
		rxtest.Next(ms(300), []int{2, 3, 4}), rxtest.Next(ms(400), []int{5, 6, 7}), rxtest.Next(ms(500), []int{8, 9}),
		rxtest.Next(ms(600), []int{}), rxtest.Completed[[]int](ms(600)),
	}, run(ms(100)))
	assert.Equal(t, rxtest.Next(ms(250), []int{2, 3}), run(ms(50))[0], "control")
}

// An error fails the open window and the outer stream. Negative control:
// the same source completing completes them.
func TestWindowTimeFailsTheOpenWindowOnAnError(t *testing.T) {
	run := func(end rxtest.Event[int]) []rxtest.Event[[]int] {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), end)
		return rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[]int] {
			return windowsOf(rx.WindowTime[int](xs, ms(100), clk))
		}).Events()
	}
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Error[[]int](ms(250), rxtest.ErrTest)}, run(rxtest.Error[int](ms(250), rxtest.ErrTest)))
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Next(ms(250), []int{1}), rxtest.Completed[[]int](ms(250))},
		run(rxtest.Completed[int](ms(250))), "control")
}

func TestWindowTimeOfZeroFailsWithAnArgumentError(t *testing.T) {
	_, err := collect(t, rx.WindowTime(rx.Of(1), 0, rxtest.NewClock()))
	var ae *rx.ArgumentError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, "d", ae.Arg)
}

// Negative control: lateStops runs a stopped timer's callback anyway (its
// own test shows it), so a WindowTime relying on the stop alone would open
// a window after Unsubscribe.
func TestWindowTimeDeliversNothingAfterUnsubscribeReturned(t *testing.T) {
	clk := lateStops{rxtest.NewClock()}
	s := rx.NewSubject[int]()
	rec := rxtest.Record(clk.Clock, rx.WindowTime[int](s, time.Second, clk))
	require.Len(t, rec.Events(), 1, "the first window opens at subscription")
	rec.Unsubscribe()
	clk.Advance(time.Hour)
	assert.Len(t, rec.Events(), 1)
}

func TestWindowTimeIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	s := rx.NewSubject[int]()
	rec := rxtest.NewRecorder[[]int](nil)
	sub := windowsOf(rx.WindowTime[int](s, time.Second, mock)).Subscribe(rec)
	defer sub.Unsubscribe()
	s.OnNext(1)
	mock.Add(time.Second)
	require.Eventually(t, func() bool { return len(rec.Values()) == 1 }, 5*time.Second, time.Millisecond)
	s.OnNext(2)
	s.OnCompleted()
	require.True(t, rec.WaitTerminated(5*time.Second))
	assert.Equal(t, [][]int{{1}, {2}}, rec.Values())
}
