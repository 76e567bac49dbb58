package rx_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestTakeOverAnEndlessSynchronousSourceTerminates(t *testing.T) {
	var emitted atomic.Int64
	rec := rxtest.Record(nil, rx.Take(endless(&emitted), 3))
	assert.Equal(t, []int{0, 1, 2}, rec.Values())
	assert.True(t, rec.Completed())
	assert.EqualValues(t, 3, emitted.Load(), "the source sees the unsubscription at once")
	require.NoError(t, rec.GrammarErr())
}

func TestTakeStopsANativeEndlessRangeThroughOperators(t *testing.T) {
	var seen atomic.Int64
	src := rx.Map(rx.Range(0, math.MaxInt), func(v int) int { seen.Add(1); return v * 2 })
	vs, err := rx.Collect(context.Background(), rx.Take(rx.Filter(src, func(v int) bool { return v%4 == 0 }), 5))
	require.NoError(t, err)
	assert.Equal(t, []int{0, 4, 8, 12, 16}, vs)
	assert.EqualValues(t, 9, seen.Load())
}

// foreign is an Observable that is not from package rx: it knows nothing of
// scopes and loops to its end whatever happens downstream.
type foreign struct{ n int }

func (f foreign) Subscribe(o rx.Observer[int]) rx.Subscription {
	for i := 0; i < f.n; i++ {
		o.OnNext(i)
	}
	o.OnCompleted()
	return nil
}

func TestTakeKeepsTheGrammarOverASourceThatIgnoresUnsubscription(t *testing.T) {
	// Negative control of the test above: a source that never checks for
	// unsubscription runs to its end (a million values here) — Take can only
	// stop forwarding them, which it must.
	rec := rxtest.Record(nil, rx.Take[int](foreign{n: 1_000_000}, 2))
	assert.Equal(t, []int{0, 1}, rec.Values())
	assert.True(t, rec.Completed())
	require.NoError(t, rec.GrammarErr())
}

func TestTakeOfZeroCompletesWithoutSubscribing(t *testing.T) {
	subscribed := false
	rec := rxtest.Record(nil, rx.Take(rx.Defer(func() rx.Observable[int] { subscribed = true; return rx.Return(1) }), 0))
	assert.True(t, rec.Completed())
	assert.False(t, subscribed)
}

func TestTakeUntilCompletesWhenStopEmitsAndUnsubscribesBoth(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(210*tick, 1), rxtest.Next(230*tick, 2), rxtest.Next(270*tick, 3), rxtest.Completed[int](400*tick))
	stop := rxtest.Hot(clk, rxtest.Next(250*tick, "stop"), rxtest.Completed[string](260*tick))
	res := rxtest.Start(clk, 200*tick, 1000*tick, func() rx.Observable[int] { return rx.TakeUntil[int, string](xs, stop) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(210*tick, 1), rxtest.Next(230*tick, 2), rxtest.Completed[int](250 * tick)}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(200*tick, 250*tick)}, xs.Subscriptions())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(200*tick, 250*tick)}, stop.Subscriptions())
}

func TestTakeUntilIgnoresAStopThatCompletesWithoutAValue(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(210*tick, 1), rxtest.Next(300*tick, 2), rxtest.Completed[int](400*tick))
	stop := rxtest.Hot(clk, rxtest.Completed[string](250*tick))
	res := rxtest.Start(clk, 200*tick, 1000*tick, func() rx.Observable[int] { return rx.TakeUntil[int, string](xs, stop) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(210*tick, 1), rxtest.Next(300*tick, 2), rxtest.Completed[int](400 * tick)}, res.Events())
}

func TestTakeUntilAStopThatFiresAtSubscriptionNeverSubscribesTheSource(t *testing.T) {
	subscribed := false
	src := rx.Defer(func() rx.Observable[int] { subscribed = true; return rx.Return(1) })
	rec := rxtest.Record(nil, rx.TakeUntil(src, rx.Return("now")))
	assert.True(t, rec.Completed())
	assert.Empty(t, rec.Values())
	assert.False(t, subscribed)
}

func TestTakeSendsNothingAfterTheObserverUnsubscribedInsideTheNthOnNext(t *testing.T) {
	run := func(unsubscribe bool) *rxtest.Recorder[int] {
		var sub rx.Subscription
		rec := rxtest.NewRecorder[int](nil)
		src := rx.NewSubject[int]()
		sub = rx.Take[int](src, 2).Subscribe(rx.NewObserver(func(v int) {
			rec.OnNext(v)
			if v == 1 && unsubscribe {
				sub.Unsubscribe()
			}
		}, rec.OnError, rec.OnCompleted))
		for i := range 10 {
			src.OnNext(i)
		}
		return rec
	}
	rec := run(true)
	assert.Equal(t, []int{0, 1}, rec.Values())
	assert.False(t, rec.Terminated(), "no OnCompleted after the unsubscription")
	assert.True(t, run(false).Completed(), "control: without the unsubscription Take completes")
}
