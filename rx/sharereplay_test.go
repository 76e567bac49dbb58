package rx_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// RxJS shareReplay({bufferSize: 2, refCount: true}): one connection; a late
// subscriber first gets the last two values; after the source completed, a
// new subscriber gets them and the completion without resubscribing.
// Negative control: Share, the same without replay, gives B nothing at 240.
func TestShareReplayReplaysTheLastNValuesToLateSubscribers(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(220), 2), rxtest.Next(ms(230), 3),
		rxtest.Next(ms(250), 4), rxtest.Completed[int](ms(260)))
	shared := rx.ShareReplay[int](xs, 2)
	control := rx.Share[int](xs)
	a := rxtest.NewRecorder[int](clk)
	var b, c, ctl *rxtest.Recorder[int]
	clk.Schedule(ms(200), func() { shared.Subscribe(a); control.Subscribe(rxtest.NewRecorder[int](clk)) })
	clk.Schedule(ms(240), func() { b = rxtest.Record(clk, shared); ctl = rxtest.Record(clk, control) })
	clk.Schedule(ms(300), func() { c = rxtest.Record(clk, shared) })
	clk.AdvanceTo(ms(1000))
	assert.Equal(t, []int{1, 2, 3, 4}, a.Values())
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(240), 2), rxtest.Next(ms(240), 3), rxtest.Next(ms(250), 4),
		rxtest.Completed[int](ms(260))}, b.Events())
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(300), 3), rxtest.Next(ms(300), 4), rxtest.Completed[int](ms(300))}, c.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(260)), rxtest.Sub(ms(200), ms(260))}, xs.Subscriptions(),
		"one connection each (ShareReplay's, Share's)")
	assert.Equal(t, []int{4}, ctl.Values(), "control: Share replays nothing")
}

// When every subscriber has left before the source ended, the source is
// unsubscribed and the buffer dropped: the next subscriber connects afresh.
// Negative control: a subscriber staying keeps the one connection.
func TestShareReplayDisconnectsWhenTheLastSubscriberLeaves(t *testing.T) {
	run := func(stay bool) ([]rxtest.Span, []int) {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(320), 2), rxtest.Completed[int](ms(400)))
		shared := rx.ShareReplay[int](xs, 2)
		var first, second *rxtest.Recorder[int]
		clk.Schedule(ms(200), func() { first = rxtest.Record(clk, shared) })
		clk.Schedule(ms(250), func() {
			if !stay {
				first.Unsubscribe()
			}
		})
		clk.Schedule(ms(300), func() { second = rxtest.Record(clk, shared) })
		clk.AdvanceTo(ms(1000))
		return xs.Subscriptions(), second.Values()
	}
	spans, vs := run(false)
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(250)), rxtest.Sub(ms(300), ms(400))}, spans)
	assert.Equal(t, []int{2}, vs, "the old buffer is gone")
	spans, vs = run(true)
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(400))}, spans, "control")
	assert.Equal(t, []int{1, 2}, vs, "control")
}

// After an error the next subscriber connects afresh (RxJS resetOnError).
// Negative control: after a completion it does not.
func TestShareReplayReconnectsAfterAnError(t *testing.T) {
	subscriptions := 0
	src := func(end rx.Observable[int]) rx.Observable[int] {
		return rx.Defer(func() rx.Observable[int] { subscriptions++; return rx.Concat(rx.Of(1), end) })
	}
	shared := rx.ShareReplay(src(rx.Throw[int](rxtest.ErrTest)), 1)
	_, err := collect(t, shared)
	assert.ErrorIs(t, err, rxtest.ErrTest)
	_, err = collect(t, shared)
	assert.ErrorIs(t, err, rxtest.ErrTest)
	assert.Equal(t, 2, subscriptions)

	subscriptions = 0
	shared = rx.ShareReplay(src(rx.Empty[int]()), 1)
	for range 2 {
		vs, err := collect(t, shared)
		require.NoError(t, err)
		assert.Equal(t, []int{1}, vs)
	}
	assert.Equal(t, 1, subscriptions, "control")
}

func TestShareReplayBelowOneFailsWithAnArgumentError(t *testing.T) {
	_, err := collect(t, rx.ShareReplay(rx.Of(1), 0))
	var ae *rx.ArgumentError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, "n", ae.Arg)
}
