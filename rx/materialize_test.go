package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

type intNote = rx.Notification[int]

// Rx.NET MaterializeTest (Materialize_Return, _Throw) and
// DematerializeTest (Dematerialize_Return, _Throw): each notification
// becomes a value, the ending last, then completion; Dematerialize
// restores the original at the same times. Negative control: Materialize
// passing the error on (instead of as a value) failed the error case.
func TestMaterializeTurnsNotificationsIntoValuesAndDematerializeTurnsThemBack(t *testing.T) {
	for _, end := range []rxtest.Event[int]{rxtest.Completed[int](ms(250)), rxtest.Error[int](ms(250), rxtest.ErrTest)} {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), end)
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[intNote] { return rx.Materialize[int](xs) })
		last := intNote{Kind: rx.OnCompletedKind}
		if end.Kind == rxtest.OnError {
			last = intNote{Kind: rx.OnErrorKind, Err: rxtest.ErrTest}
		}
		assert.Equal(t, []rxtest.Event[intNote]{
			rxtest.Next(ms(210), intNote{Kind: rx.OnNextKind, Value: 2}), rxtest.Next(ms(250), last), rxtest.Completed[intNote](ms(250)),
		}, res.Events())

		clk = rxtest.NewClock()
		xs = rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), end)
		back := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Dematerialize(rx.Materialize[int](xs)) })
		assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(210), 2), end}, back.Events())
	}
}

// An ending notification ends the stream and unsubscribes the source, as
// Rx.NET's Dematerialize; a nil Err and an unknown kind are errors, not
// panics. Negative control: without up.cancel() in verdict.complete the
// source stayed subscribed to 400.
func TestDematerializeEndsAtAnEndingNotificationAndUnsubscribesItsSource(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(210), intNote{Kind: rx.OnNextKind, Value: 1}),
		rxtest.Next(ms(220), intNote{Kind: rx.OnCompletedKind}), rxtest.Next(ms(230), intNote{Kind: rx.OnNextKind, Value: 2}),
		rxtest.Completed[intNote](ms(400)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Dematerialize[int](xs) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(210), 1), rxtest.Completed[int](ms(220))}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(220))}, xs.Subscriptions())

	_, err := collect(t, rx.Dematerialize(rx.Of(intNote{Kind: rx.OnErrorKind})))
	assert.ErrorIs(t, err, rx.ErrNilError)
	_, err = collect(t, rx.Dematerialize(rx.Of(intNote{Kind: 9})))
	ae := as[*rx.ArgumentError](t, err)
	assert.Equal(t, "Dematerialize", ae.Op)
	require.Equal(t, "OnNext(1)", intNote{Kind: rx.OnNextKind, Value: 1}.String())
}
