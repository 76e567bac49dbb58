package rxtest_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Issue 19 §7. Negative control: with the subscribers kept in a map (as
// before), the two sides of CombineLatest2 were notified in map order and
// about half of the 50 runs gave "1-2" before "2-1"; the test failed so.
func TestHotNotifiesItsSubscribersInSubscriptionOrder(t *testing.T) {
	for range 50 {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(10*time.Millisecond, 1), rxtest.Next(20*time.Millisecond, 2),
			rxtest.Completed[int](30*time.Millisecond))
		rec := rxtest.Record(clk, rx.CombineLatest2[int, int](xs, xs, func(a, b int) string { return fmt.Sprintf("%d-%d", a, b) }))
		clk.Advance(time.Second)
		require.Equal(t, []string{"1-1", "2-1", "2-2"}, rec.Values(), "a (subscribed first) hears each value before b")
		require.True(t, rec.Completed())
	}
}

// Issue 19 §8: a Cold source subscribed on one goroutine while another
// advances the clock (and so ends subscriptions) is race-free. The race
// detector is the assertion (run with -race). Negative control: with the
// stop list of Cold's source unguarded (as before), -race reported a write
// in the subscription racing with the read in its Finally on the advancing
// goroutine.
func TestColdIsRaceFreeWhenAdvancedOnAnotherGoroutineThanItIsSubscribedOn(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Cold(clk, rxtest.Next(0, 1), rxtest.Next(0, 2), rxtest.Completed[int](0))
	const n = 200
	recs := make([]*rxtest.Recorder[int], n)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range recs {
			recs[i] = rxtest.Record[int](nil, xs)
		}
	})
	subscribed := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			clk.Advance(0) // runs the events (due at once) of whichever subscriptions exist
			select {
			case <-subscribed:
				return
			default:
			}
		}
	}()
	wg.Wait()
	close(subscribed)
	<-done
	clk.Advance(0)
	for i, r := range recs {
		require.True(t, r.Completed(), "subscription %d", i)
		assert.Equal(t, []int{1, 2}, r.Values(), "subscription %d", i)
	}
	assert.Len(t, xs.Subscriptions(), n)
}
