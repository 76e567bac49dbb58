package rx_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET DelaySubscriptionTest (DelaySubscription_TimeSpan_Simple, _Error):
// the cold source is subscribed 30 after the subscription, so everything
// shifts by 30 (Subscribe(230, 300)). Negative control: subscribing at once
// gave 250, 260, 270 and Sub(200, 270).
func TestDelaySubscriptionSubscribesTheSourceDLater(t *testing.T) {
	for _, end := range []rxtest.Event[int]{rxtest.Completed[int](ms(70)), rxtest.Error[int](ms(70), rxtest.ErrTest)} {
		clk := rxtest.NewClock()
		xs := rxtest.Cold(clk, rxtest.Next(ms(50), 42), rxtest.Next(ms(60), 43), end)
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.DelaySubscription[int](xs, ms(30), clk) })
		shifted := end
		shifted.At = ms(300)
		assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(280), 42), rxtest.Next(ms(290), 43), shifted}, res.Events())
		assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(230), ms(300))}, xs.Subscriptions())
	}
}

// Unsubscribing before the delay has passed stops the timer: the source is
// never subscribed, and nothing is left armed. Negative control: without the
// hook closing the timer slot, clk.Pending() was 1 after the unsubscription
// (and the callback's scope check alone kept the source unsubscribed).
func TestDelaySubscriptionUnsubscribedEarlyNeverSubscribesTheSource(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Cold(clk, rxtest.Next(ms(50), 42), rxtest.Completed[int](ms(70)))
	var pending int
	clk.Schedule(ms(220), func() { pending = clk.Pending() })
	res := rxtest.Start(clk, ms(200), ms(210), func() rx.Observable[int] { return rx.DelaySubscription[int](xs, ms(30), clk) })
	clk.Advance(ms(100))
	assert.Empty(t, res.Events())
	assert.Empty(t, xs.Subscriptions())
	assert.Zero(t, pending, "the timer is stopped, not left to fire")
}

// On a plain *clock.Mock too (the time operators' rule): its AfterFunc
// callbacks run on goroutines of their own.
func TestDelaySubscriptionIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	rec := rxtest.NewRecorder[int](nil)
	rx.DelaySubscription(rx.Of(1, 2), time.Second, mock).Subscribe(rec)
	mock.Add(500 * time.Millisecond)
	assert.Empty(t, rec.Events(), "not subscribed before the delay")
	mock.Add(500 * time.Millisecond)
	require.True(t, rec.WaitTerminated(5*time.Second))
	assert.Equal(t, []int{1, 2}, rec.Values())
	require.NoError(t, rec.GrammarErr())
}
