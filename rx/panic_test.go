package rx_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// recovered runs f and returns what it panicked with, nil if it returned.
func recovered(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// boundedWait fails the test when wg is not done within a second of real
// time: the subjects below must not make a producer wait for room that
// nobody will make.
func boundedWait(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // catches a hang only; generous for a loaded CI
		t.Fatalf("%s: still waiting after 30s", what)
	}
}

// Issue 19 §1. Negative control: without mailbox.abandon (the deferred
// release in postAs and run, and in Subject.OnNext's fast path), the subject keeps the panicked goroutine as its
// owner: OnNext(2) was queued for nobody (neither observer saw it) and the
// producers blocked once 32 values were queued; the test failed so.
func TestAPanickingObserverLeavesTheSubjectUsableForEveryoneElse(t *testing.T) {
	s := rx.NewSubject[int]()
	calm := rxtest.Record[int](nil, s)
	var panicky []int
	s.Subscribe(rx.NewObserver(func(v int) {
		panicky = append(panicky, v)
		if v == 1 {
			panic("observer bug")
		}
	}, nil, nil))

	assert.Equal(t, "observer bug", recovered(func() { s.OnNext(1) }), "the panic reaches the caller of OnNext")
	s.OnNext(2)
	assert.Equal(t, []int{1, 2}, calm.Values())
	assert.Equal(t, []int{1, 2}, panicky, "the panicking observer stays subscribed, as in Rx.NET")

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				s.OnNext(1000*(g+1) + i)
			}
		})
	}
	boundedWait(t, &wg, "producers on other goroutines")
	assert.Len(t, calm.Values(), 402)
	require.NoError(t, calm.GrammarErr())
}

// The values other producers queued while the panicking delivery ran are
// delivered, in order, by the next post; none is lost to the panic.
// Negative control: with handleBatch not requeueing the rest of its batch,
// the values queued behind the panicking one were dropped (2..5 missing).
func TestValuesQueuedBehindAPanickingDeliveryAreDeliveredInOrderByTheNextPost(t *testing.T) {
	s := rx.NewSubject[int]()
	var got []int
	entered, release := make(chan struct{}), make(chan struct{})
	s.Subscribe(rx.NewObserver(func(v int) {
		got = append(got, v)
		if v == 0 {
			close(entered)
			<-release
		}
		if v == 1 {
			panic("observer bug")
		}
	}, nil, nil))
	var owner sync.WaitGroup
	var p any
	owner.Go(func() { p = recovered(func() { s.OnNext(0) }) })
	<-entered
	for v := 1; v <= 5; v++ {
		s.OnNext(v) // queued behind 0 (another goroutine is delivering)
	}
	close(release)
	owner.Wait()
	assert.Equal(t, "observer bug", p, "the owner drained 1, which panicked on its goroutine")
	s.OnNext(6)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6}, got)
}

// Issue 19 §1 through All: a user function that panics inside the loop's
// source is raised on the ranging goroutine, and the BehaviorSubject it
// ranged over still serves later subscribers. Negative control: without
// mailbox.abandon the subject stayed owned by the goroutine that panicked,
// First on it waited until its context ended (DeadlineExceeded) and the
// later OnNext reached nobody.
func TestAPanicInsideAllLeavesTheBehaviorSubjectItRangedOverUsable(t *testing.T) {
	bs := rx.NewBehaviorSubject(1)
	p := recovered(func() {
		for range rx.All(context.Background(), rx.Map[int](bs, func(v int) int {
			if v == 1 {
				panic("mapper bug")
			}
			return v
		})) {
			t.Error("no value may reach the loop")
		}
	})
	assert.Equal(t, "mapper bug", p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // catches a hang only
	defer cancel()
	v, err := rx.First[int](ctx, bs)
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	later := rxtest.Record[int](nil, bs)
	bs.OnNext(2)
	assert.Equal(t, []int{1, 2}, later.Values())
}
