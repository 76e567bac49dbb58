package memstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// gated subscribes to src with an observer that blocks in its first value
// after the first (the Initial, for a query) until released. It returns the
// recorder, a channel closed once the observer is blocked, and release.
func gated[T any](t *testing.T, src rx.Observable[T]) (*rxtest.Recorder[T], <-chan struct{}, func()) {
	t.Helper()
	rec := rxtest.NewRecorder[T](nil)
	blocked, release := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	n := 0
	sub := src.Subscribe(rx.NewObserver(func(v T) {
		n++
		if n == 2 {
			once.Do(func() { close(blocked) })
			<-release
		}
		rec.OnNext(v)
	}, rec.OnError, rec.OnCompleted))
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(sub.Unsubscribe)
	t.Cleanup(free) // runs first: a failing test leaves nothing blocked
	return rec, blocked, free
}

func await(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-timeoutAfter(t):
		t.Fatalf("waited %s for %s", bound, what)
	}
}

// fallBehind blocks a subscriber of namespace:acme/Q on its first frame,
// writes 10 more versions of acme/Q/a while it is blocked, releases it and
// returns what it received once it has caught up.
func fallBehind(t *testing.T, queueFrames int) ([]mesh.Change, memstore.Stats) {
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock(), QueueFrames: queueFrames})
	rec, blocked, release := gated(t, s.Query("namespace:acme/Q"))
	put(t, s, "acme/Q/a", "Item", `{"v":0}`)
	await(t, blocked, "the subscriber to block on the first write's frame")
	for i := 1; i <= 10; i++ {
		put(t, s, "acme/Q/a", "Item", fmt.Sprintf(`{"v":%d}`, i))
	}
	release()
	settle(t, s)
	return rec.Values(), s.Stats()
}

func TestASubscriberThatFallsBehindPastTheBoundGetsOneResetWithTheCurrentResult(t *testing.T) {
	frames, stats := fallBehind(t, 4)
	kinds := make([]mesh.ChangeKind, 0, len(frames))
	for _, c := range frames {
		kinds = append(kinds, c.Kind)
	}
	require.Equal(t, []mesh.ChangeKind{mesh.Initial, mesh.Added, mesh.Reset}, kinds,
		"the 10 frames it fell behind on collapse into one Reset")
	reset := frames[2]
	require.Len(t, reset.Items, 1)
	assert.EqualValues(t, 11, reset.Items[0].Version, "the Reset carries the result as it is when the subscriber catches up")
	assert.JSONEq(t, `{"v":10}`, string(reset.Items[0].Content))
	assert.Equal(t, []string{"acme"}, reset.Partitions)
	assert.EqualValues(t, 1, stats.Resets)

	// Negative control: with a bound above what it fell behind by, it
	// receives every frame and no Reset.
	frames, stats = fallBehind(t, 100)
	require.Len(t, frames, 1+1+10)
	for i, c := range frames[2:] {
		assert.Equal(t, mesh.Updated, c.Kind)
		assert.EqualValues(t, i+2, c.Items[0].Version)
	}
	assert.Zero(t, stats.Resets)
}

func TestAChangesSubscriberThatFallsBehindGetsOneGapNoticeInsteadOfTheNoticesItMissed(t *testing.T) {
	for _, c := range []struct {
		queueFrames int
		want        int // notices after the blocked one
	}{{4, 1 + 1}, {100, 10 + 1}} { // the gap notice and the marker's; the control: every notice
		t.Run(fmt.Sprintf("QueueFrames=%d", c.queueFrames), func(t *testing.T) {
			s := newStore(t, memstore.Options{Clock: rxtest.NewClock(), QueueFrames: c.queueFrames})
			// gated blocks on the second notice: the first write's is the first.
			rec, blocked, release := gated(t, s.Changes())
			put(t, s, "acme/Q/a", "Item", `{"v":0}`)
			put(t, s, "acme/Q/a", "Item", `{"v":1}`)
			await(t, blocked, "the Changes subscriber to block")
			for i := 2; i <= 11; i++ {
				put(t, s, "acme/Q/a", "Item", fmt.Sprintf(`{"v":%d}`, i))
			}
			release()
			settle(t, s) // the gap is delivered before the marker is written
			put(t, s, "acme/Q/marker", "Item", "")
			settle(t, s)
			got := rec.Values()
			require.Len(t, got, 2+c.want)
			last := got[len(got)-1]
			assert.Equal(t, "acme/Q/marker", last.Path, "notices after the gap arrive as usual")
			if c.queueFrames < 10 {
				assert.Equal(t, mesh.ChangeNotice{Op: mesh.WriteUpdate}, got[2], "the gap: anything may have changed")
			} else {
				assert.NotContains(t, got, mesh.ChangeNotice{Op: mesh.WriteUpdate})
			}
		})
	}
}

func TestSettleSaysHowManySubscribersAreBehindWhenItsContextEnds(t *testing.T) {
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	_, blocked, release := gated(t, s.Query("namespace:acme/Q"))
	put(t, s, "acme/Q/a", "Item", "")
	await(t, blocked, "the subscriber to block")
	put(t, s, "acme/Q/b", "Item", "")

	// The context is already over: Settle reports at once, without waiting.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Settle(ctx)
	var se *memstore.SettleError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 1, se.Behind)
	assert.ErrorIs(t, err, context.Canceled)

	// Control: once released, it catches up and Settle returns nil.
	release()
	settle(t, s)
}

// A subscription's drain runs only while it has frames to deliver: after
// the writes are delivered and the subscriptions end, no goroutine is left.
func TestNoDeliveryGoroutineOutlivesItsSubscription(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s, err := memstore.New(memstore.Options{Clock: rxtest.NewClock()})
	require.NoError(t, err)
	var subs []rx.Subscription
	for i := range 50 {
		subs = append(subs, s.Query(fmt.Sprintf("namespace:acme/n%d", i%5)).Subscribe(rx.NewObserver[mesh.Change](nil, nil, nil)))
		subs = append(subs, s.Changes().Subscribe(rx.NewObserver[mesh.ChangeNotice](nil, nil, nil)))
	}
	for i := range 1000 {
		put(t, s, fmt.Sprintf("acme/n%d/x%d", i%5, i%17), "Item", fmt.Sprintf(`{"i":%d}`, i))
	}
	for _, sub := range subs[:50] { // half leave with frames possibly still queued
		sub.Unsubscribe()
	}
	settle(t, s)
	for _, sub := range subs[50:] {
		sub.Unsubscribe()
	}
	require.NoError(t, s.Close())

	// Negative control: the check sees a drain that still has work — the
	// one of a subscriber blocked in OnNext.
	before := goleak.IgnoreCurrent()
	blockedStore := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	_, blocked, release := gated(t, blockedStore.Query("namespace:acme/Q"))
	put(t, blockedStore, "acme/Q/a", "Item", "")
	await(t, blocked, "the subscriber to block")
	assert.Error(t, goleak.Find(before), "the blocked subscriber's drain is found")
	release()
	settle(t, blockedStore)
}

func TestANegativeQueueBoundIsRefused(t *testing.T) {
	_, err := memstore.New(memstore.Options{QueueFrames: -1})
	assert.ErrorContains(t, err, "QueueFrames")
	s, err := memstore.New(memstore.Options{QueueFrames: 1}) // the control
	require.NoError(t, err)
	require.NoError(t, s.Close())
}
