package rx_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Subject.OnNext's fast path (mailbox take, emit, leave; unwind on a panic)
// into a fused chain, the path B14's Subject rows measure: each test
// subscribes Map→Filter, which the subject runs through one direct call per
// value (SubjectFuses), and holds one of the mailbox's guarantees there.

// fusedOver subscribes Map(f)→Filter(all) over s and records it.
func fusedOver(t *testing.T, s *rx.Subject[int], f func(int) int) *rxtest.Recorder[int] {
	t.Helper()
	rec := rxtest.Record[int](nil, rx.Filter(rx.Map[int, int](s, f), func(int) bool { return true }))
	require.True(t, rx.SubjectFuses(s), "the subject delivers through the fused chain")
	return rec
}

// Negative control, run by hand: with mailbox.take always succeeding (no
// exclusion), the user function ran on two goroutines at once ("Should be
// zero, but was 2").
func TestOnNextFromManyGoroutinesRunsAFusedChainOneValueAtATime(t *testing.T) {
	s := rx.NewSubject[int]()
	var inside, overlap atomic.Int32
	rec := fusedOver(t, s, func(v int) int {
		if n := inside.Add(1); n > 1 {
			overlap.Store(n)
		}
		inside.Add(-1)
		return v
	})
	const producers, each = 8, 2000
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				s.OnNext(p*each + i)
			}
		})
	}
	boundedWait(t, &wg, "8 producers of 2,000 values")
	s.OnCompleted()
	assert.Zero(t, overlap.Load(), "the chain's function ran on two goroutines at once")
	got := rec.Values()
	require.Len(t, got, producers*each)
	last := make([]int, producers)
	for p := range last {
		last[p] = -1
	}
	for _, v := range got {
		p := v / each
		require.Greater(t, v, last[p], "each producer's values arrive in its order")
		last[p] = v
	}
	assert.True(t, rec.Completed())
}

// Negative control, run by hand: with take succeeding for the goroutine
// that owns the mailbox (CompareAndSwap(g, g) as well as (0, g)), the
// values posted from inside the function were delivered nested, before the
// value in flight: the recorder saw 1, 2, 3, 0.
func TestOnNextFromInsideAFusedChainsFunctionQueuesBehindTheValueInFlight(t *testing.T) {
	s := rx.NewSubject[int]()
	rec := fusedOver(t, s, func(v int) int {
		if v == 0 {
			for i := 1; i <= 3; i++ {
				s.OnNext(i)
			}
		}
		return v
	})
	s.OnNext(0)
	s.OnNext(4)
	assert.Equal(t, []int{0, 1, 2, 3, 4}, rec.Values())
}

// Negative control, run by hand: without mapFilter's checks of the stages'
// scopes after their functions (fsc, ksc), the value in flight reached the
// observer ("value 2 reached the observer after its chain unsubscribed").
func TestUnsubscribingInsideAFusedChainsFunctionStopsThatValueAndLeavesTheSubjectToOthers(t *testing.T) {
	s := rx.NewSubject[int]()
	var sub rx.Subscription
	var seen []int
	sub = rx.Filter(rx.Map[int, int](s, func(v int) int {
		seen = append(seen, v)
		if v == 2 {
			sub.Unsubscribe()
		}
		return v
	}), func(int) bool { return true }).Subscribe(rx.NewObserver(func(v int) {
		if v >= 2 {
			t.Errorf("value %d reached the observer after its chain unsubscribed", v)
		}
	}, nil, nil))
	require.True(t, rx.SubjectFuses(s))
	other := rxtest.Record[int](nil, s)
	for v := range 5 {
		s.OnNext(v)
	}
	assert.Equal(t, []int{0, 1, 2}, seen, "the function runs for no value after its unsubscription")
	assert.Equal(t, []int{0, 1, 2, 3, 4}, other.Values())
}

// Negative control, run by hand: without unwind's release (abandon) the
// mailbox stayed owned by the goroutine that panicked: OnNext(2) was queued
// for nobody, the producers blocked once 32 values were queued, and the
// bounded wait failed ("producers after the panic: still waiting after 1s").
func TestAPanicInAFusedChainsFunctionReachesTheCallerAndLeavesTheSubjectUsable(t *testing.T) {
	s := rx.NewSubject[int]()
	rec := fusedOver(t, s, func(v int) int {
		if v == 1 {
			panic("user function bug")
		}
		return v
	})
	s.OnNext(0)
	assert.Equal(t, "user function bug", recovered(func() { s.OnNext(1) }), "the panic reaches the caller of OnNext")
	s.OnNext(2)
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for i := range 100 {
				s.OnNext(1000*(p+1) + i)
			}
		})
	}
	boundedWait(t, &wg, "producers after the panic")
	got := rec.Values()
	require.GreaterOrEqual(t, len(got), 2)
	assert.Equal(t, []int{0, 2}, got[:2])
	assert.Len(t, got, 402)
}
