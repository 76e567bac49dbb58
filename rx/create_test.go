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

func TestCreationOperatorsRefuseNilsWithClearErrors(t *testing.T) {
	assert.ErrorContains(t, rxtest.Record(nil, rx.Defer(func() rx.Observable[int] { return nil })).Err(), "nil Observable")
	assert.ErrorContains(t, rxtest.Record(nil, rx.Throw[int](nil)).Err(), "nil error")
}

func TestFromChannelEmitsUntilClosedAndLeavesNoGoroutine(t *testing.T) {
	ch := make(chan int, 3)
	ch <- 1
	ch <- 2
	close(ch)
	rec := rxtest.NewRecorder[int](nil)
	rx.FromChannel(ch).Subscribe(rec)
	require.True(t, rec.WaitTerminated(5*time.Second))
	assert.Equal(t, []int{1, 2}, rec.Values())

	open := make(chan int)
	sub := rx.FromChannel(open).Subscribe(rx.NewObserver[int](nil, nil, nil))
	sub.Unsubscribe() // goleak in TestMain fails the package if the receiver stayed
}

func TestRangeNearTheIntegerLimitEmitsAllValuesOrFails(t *testing.T) {
	vs, err := rx.Collect(context.Background(), rx.Range(math.MaxInt-2, 3))
	require.NoError(t, err)
	assert.Equal(t, []int{math.MaxInt - 2, math.MaxInt - 1, math.MaxInt}, vs)

	_, err = rx.Collect(context.Background(), rx.Range(math.MaxInt-1, 3))
	var re *rx.RangeError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 3, re.Count)

	vs, err = rx.Collect(context.Background(), rx.Range(-2, 3))
	require.NoError(t, err)
	assert.Equal(t, []int{-2, -1, 0}, vs, "control: an ordinary range")
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

// Issue 19 §9. Take bounds the run so the test ends either way. Negative
// control: with the count <= 0 case removed from Range, Range(-1, MinInt)
// computes end = -1+MinInt, which wraps to MaxInt, and Take gets its five
// values (the test was run so before the fix and failed).
func TestRangeWithANegativeCountEmitsNothingEvenWhenStartPlusCountWraps(t *testing.T) {
	for _, c := range []struct{ start, count int }{
		{-1, math.MinInt}, {0, math.MinInt}, {math.MaxInt, math.MinInt}, {math.MinInt, math.MinInt},
		{5, -1}, {math.MinInt, -1}, {math.MaxInt, 0}, {-10, math.MinInt + 1},
	} {
		vs, err := collect(t, rx.Take(rx.Range(c.start, c.count), 5))
		require.NoError(t, err, "Range(%d, %d)", c.start, c.count)
		assert.Empty(t, vs, "Range(%d, %d)", c.start, c.count)
	}
	vs, err := collect(t, rx.Take(rx.Range(-1, 3), 5))
	require.NoError(t, err)
	assert.Equal(t, []int{-1, 0, 1}, vs, "control: a positive count near zero")
}
