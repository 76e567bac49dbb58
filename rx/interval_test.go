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

// After Rx.NET's Interval_TimeSpan_Basic (subscribe at 200, dispose at 1000,
// period 100; expectations derived here).
func TestIntervalEmitsACountEveryPeriodFromSubscription(t *testing.T) {
	clk := rxtest.NewClock()
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Interval(ms(100), clk) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(300), 0), rxtest.Next(ms(400), 1), rxtest.Next(ms(500), 2),
		rxtest.Next(ms(600), 3), rxtest.Next(ms(700), 4), rxtest.Next(ms(800), 5), rxtest.Next(ms(900), 6)}, res.Events())
	assert.Zero(t, clk.Pending(), "disposal at 1000 stops the timer")
}

func TestIntervalUnderTakeCompletesAndStops(t *testing.T) {
	clk := rxtest.NewClock()
	rec := rxtest.Record(clk, rx.Take(rx.Interval(time.Second, clk), 2))
	clk.Advance(time.Minute)
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(time.Second, 0), rxtest.Next(2*time.Second, 1), rxtest.Completed[int](2 * time.Second)}, rec.Events())
	assert.Zero(t, clk.Pending())
}

func TestIntervalDeliversNothingAfterUnsubscribeReturned(t *testing.T) {
	clk := lateStops{rxtest.NewClock()}
	rec := rxtest.Record(clk.Clock, rx.Interval(time.Second, clk))
	clk.Advance(time.Second)
	rec.Unsubscribe()
	clk.Advance(time.Hour)
	assert.Equal(t, []int{0}, rec.Values())
}

func TestIntervalOfZeroFailsWithAnArgumentError(t *testing.T) {
	_, err := collect(t, rx.Interval(0, rxtest.NewClock()))
	var ae *rx.ArgumentError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, "Interval", ae.Op)
}

func TestIntervalIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	rec := rxtest.NewRecorder[int](nil)
	rx.Take(rx.Interval(time.Second, mock), 2).Subscribe(rec)
	mock.Add(time.Second)
	require.Eventually(t, func() bool { return len(rec.Values()) == 1 }, 5*time.Second, time.Millisecond)
	mock.Add(time.Second)
	require.True(t, rec.WaitTerminated(5*time.Second))
	assert.Equal(t, []int{0, 1}, rec.Values())
}
