package rx_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// failing emits its attempt number, then fails with an error naming it.
func failing(attempts *[]time.Duration, clk *rxtest.Clock) rx.Observable[int] {
	return rx.Defer(func() rx.Observable[int] {
		*attempts = append(*attempts, clk.Elapsed())
		n := len(*attempts)
		return rx.Concat(rx.Of(n), rx.Throw[int](fmt.Errorf("attempt %d: %w", n, rxtest.ErrTest)))
	})
}

func TestRetryBackoffWaitsDoublingDelaysCappedAtMaxThenFailsWithTheLastError(t *testing.T) {
	clk := rxtest.NewClock()
	var attempts []time.Duration
	rec := rxtest.Record(clk, rx.RetryBackoff(failing(&attempts, clk), 5, time.Second, 3*time.Second, clk))
	clk.Advance(time.Hour)
	// waits 1s, 2s, 3s (4s capped), 3s
	assert.Equal(t, []time.Duration{0, time.Second, 3 * time.Second, 6 * time.Second, 9 * time.Second}, attempts)
	assert.Equal(t, []int{1, 2, 3, 4, 5}, rec.Values())
	assert.EqualError(t, rec.Err(), "attempt 5: "+rxtest.ErrTest.Error())
	assert.Zero(t, clk.Pending())
}

func TestRetryBackoffCompletesWhenAnAttemptSucceeds(t *testing.T) {
	clk := rxtest.NewClock()
	n := 0
	src := rx.Defer(func() rx.Observable[string] {
		if n++; n < 3 {
			return rx.Throw[string](rxtest.ErrTest)
		}
		return rx.Of("ok")
	})
	rec := rxtest.Record(clk, rx.RetryBackoff(src, 10, time.Second, time.Minute, clk))
	clk.Advance(time.Second)
	assert.False(t, rec.Terminated(), "the second wait is 2s")
	clk.Advance(2 * time.Second)
	assert.Equal(t, []rxtest.Event[string]{rxtest.Next(3*time.Second, "ok"), rxtest.Completed[string](3 * time.Second)}, rec.Events())
}

func TestRetryBackoffWithOneAttemptDoesNotRetry(t *testing.T) {
	clk := rxtest.NewClock()
	var attempts []time.Duration
	for _, n := range []int{1, 0, -3} {
		attempts = nil
		rec := rxtest.Record(clk, rx.RetryBackoff(failing(&attempts, clk), n, time.Second, time.Second, clk))
		clk.Advance(time.Hour)
		assert.Len(t, attempts, 1)
		assert.ErrorIs(t, rec.Err(), rxtest.ErrTest)
	}
}

func TestRetryBackoffWithoutAWaitRetriesSynchronousFailuresWithoutGrowingTheStack(t *testing.T) {
	n := 0
	src := rx.Defer(func() rx.Observable[int] { n++; return rx.Throw[int](rxtest.ErrTest) })
	_, err := rx.First(context.Background(), rx.RetryBackoff(src, 100_000, 0, 0, rxtest.NewClock()))
	assert.ErrorIs(t, err, rxtest.ErrTest)
	assert.Equal(t, 100_000, n)
}

func TestUnsubscribingDuringARetryBackoffWaitCancelsTheRetry(t *testing.T) {
	clk := lateStops{rxtest.NewClock()}
	var attempts []time.Duration
	rec := rxtest.Record(clk.Clock, rx.RetryBackoff(failing(&attempts, clk.Clock), 5, time.Second, time.Second, clk))
	rec.Unsubscribe()
	clk.Advance(time.Hour) // the wait's timer fires though it was stopped
	assert.Len(t, attempts, 1, "no attempt after Unsubscribe returned")
	assert.Equal(t, []int{1}, rec.Values())
	assert.False(t, rec.Terminated())
}

func TestRetryBackoffIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	n := 0
	src := rx.Defer(func() rx.Observable[int] {
		if n++; n < 2 {
			return rx.Throw[int](errors.New("first"))
		}
		return rx.Of(n)
	})
	rec := rxtest.NewRecorder[int](nil)
	rx.RetryBackoff(src, 3, time.Second, time.Second, mock).Subscribe(rec)
	mock.Add(time.Second)
	require.True(t, rec.WaitTerminated(5*time.Second))
	assert.Equal(t, []int{2}, rec.Values())
	assert.True(t, rec.Completed())
}
