package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestRetryErrorsAgainAfterItsAttemptsOnAThrowSource(t *testing.T) {
	// rxgo v2.5.0's Retry completes silently here; the last error must win.
	subscriptions := 0
	src := rx.Defer(func() rx.Observable[int] { subscriptions++; return rx.Throw[int](rxtest.ErrTest) })
	rec := rxtest.Record(nil, rx.Retry(src, 3))
	assert.ErrorIs(t, rec.Err(), rxtest.ErrTest)
	assert.Equal(t, 3, subscriptions)
	assert.False(t, rec.Completed())
}

func TestRetryResubscribesUntilASubscriptionSucceeds(t *testing.T) {
	n := 0
	src := rx.Defer(func() rx.Observable[int] {
		n++
		if n < 3 {
			return rx.Concat(rx.Of(n), rx.Throw[int](rxtest.ErrTest))
		}
		return rx.Of(n)
	})
	rec := rxtest.Record(nil, rx.Retry(src, 5))
	assert.Equal(t, []int{1, 2, 3}, rec.Values())
	assert.True(t, rec.Completed())
}

func TestRetryOfManySynchronousFailuresDoesNotGrowTheStack(t *testing.T) {
	n := 0
	rec := rxtest.Record(nil, rx.Retry(rx.Defer(func() rx.Observable[int] { n++; return rx.Throw[int](rxtest.ErrTest) }), 500_000))
	assert.ErrorIs(t, rec.Err(), rxtest.ErrTest)
	assert.Equal(t, 500_000, n)
}
