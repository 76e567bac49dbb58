package rx_test

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// endless is an endless synchronous source that counts what it emits and
// stops only when its context says the chain has unsubscribed.
func endless(emitted *atomic.Int64) rx.Observable[int] {
	return rx.Create(func(ctx context.Context, o rx.Observer[int]) {
		for i := 0; ctx.Err() == nil; i++ {
			emitted.Add(1)
			o.OnNext(i)
		}
	})
}

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

func TestNothingIsDeliveredAfterUnsubscribeFromInsideANotification(t *testing.T) {
	var emitted atomic.Int64
	var sub rx.Subscription
	var got []int
	ready := make(chan struct{})
	src := rx.Create(func(ctx context.Context, o rx.Observer[int]) {
		go func() {
			<-ready
			for i := 0; ctx.Err() == nil; i++ {
				emitted.Add(1)
				o.OnNext(i)
			}
		}()
	})
	done := make(chan struct{})
	sub = src.Subscribe(rx.NewObserver(func(v int) {
		got = append(got, v)
		if v == 2 {
			sub.Unsubscribe()
			close(done)
		}
	}, nil, nil))
	close(ready)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the producer never reached the third value")
	}
	assert.Equal(t, []int{0, 1, 2}, got)
}

func TestNothingIsDeliveredAfterUnsubscribeFromAnotherGoroutineOnceTheProducerStops(t *testing.T) {
	var (
		mu       sync.Mutex
		after    int
		returned bool
		stopped  = make(chan struct{})
		started  = make(chan struct{})
	)
	src := rx.Create(func(ctx context.Context, o rx.Observer[int]) {
		go func() {
			defer close(stopped)
			close(started)
			for i := 0; ctx.Err() == nil; i++ {
				o.OnNext(i)
			}
		}()
	})
	sub := src.Subscribe(rx.NewObserver(func(int) {
		mu.Lock()
		if returned {
			after++
		}
		mu.Unlock()
	}, nil, nil))
	<-started
	sub.Unsubscribe()
	mu.Lock()
	returned = true
	mu.Unlock()
	select {
	case <-stopped: // the producer saw ctx done
	case <-time.After(5 * time.Second):
		t.Fatal("unsubscribing did not stop the producer")
	}
	mu.Lock()
	defer mu.Unlock()
	// A value already past the gate when Unsubscribe was called may still land
	// (Unsubscribe never blocks); nothing after it.
	assert.LessOrEqual(t, after, 1)
}

func TestUnsubscribeIsIdempotent(t *testing.T) {
	sub := rx.Never[int]().Subscribe(rx.NewObserver[int](nil, nil, nil))
	sub.Unsubscribe()
	sub.Unsubscribe()
	clk := rxtest.NewClock()
	sub = rx.Timer(time.Second, clk).Subscribe(rx.NewObserver[time.Time](nil, nil, nil))
	require.Equal(t, 1, clk.Pending())
	sub.Unsubscribe()
	sub.Unsubscribe()
	assert.Zero(t, clk.Pending(), "unsubscribing stops the timer")
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
