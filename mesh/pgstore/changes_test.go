package pgstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// blockedChanges subscribes to s.Changes with an observer that records every
// notice and blocks in the first until release is called (at the latest when
// the test ends). It returns the recording and a channel closed once the
// observer is blocked.
func blockedChanges(t *testing.T, s *Store) (*watch[mesh.ChangeNotice], <-chan struct{}, func()) {
	t.Helper()
	w := &watch[mesh.ChangeNotice]{what: "blocked changes", rec: rxtest.NewRecorder[mesh.ChangeNotice](nil), frames: rx.NewReplaySubject[mesh.ChangeNotice](0)}
	blocked, released := make(chan struct{}), make(chan struct{})
	var blockOnce, releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(released) }) }
	sub := s.Changes().Subscribe(rx.NewObserver(
		func(n mesh.ChangeNotice) {
			blockOnce.Do(func() { close(blocked); <-released })
			w.rec.OnNext(n)
			w.frames.OnNext(n)
		},
		func(err error) { w.rec.OnError(err); w.frames.OnError(err) },
		func() { w.rec.OnCompleted(); w.frames.OnCompleted() },
	))
	t.Cleanup(func() { release(); sub.Unsubscribe() })
	return w, blocked, release
}

// awaitFeed waits (at most testBudget) until s's change feed is connected:
// a notice sent before the listener listens reaches no subscriber.
func awaitFeed(t *testing.T, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	_, err := rx.First(ctx, rx.Filter(s.Feed(), func(f FeedState) bool { return f.Connected }))
	require.NoError(t, err, "waiting (at most %s) for the change feed to connect", testBudget)
}

func awaitClosed(t *testing.T, c <-chan struct{}, waitingFor string) {
	t.Helper()
	timer := time.NewTimer(testBudget)
	defer timer.Stop()
	select {
	case <-c:
	case <-timer.C:
		t.Fatalf("waiting (at most %s) for %s", testBudget, waitingFor)
	}
}

// A Changes subscriber blocked in OnNext must delay neither the listener
// nor, through it, a live query of the same store, nor another Changes
// subscriber.
//
// Negative control (checked by hand once; no seam a user has reaches the
// listener's delivery): with announce delivering on the listener's goroutine
// (w.drain() in place of go w.drain(), which is what the plain rx.Subject
// Changes was before did), this test fails: the live query's wait for
// "Added acme/Docs/p0" times out with only the Initial and
// "Added acme/Docs/first" received, since the listener is stuck in the
// blocked observer and reads no further notice.
func TestABlockedChangesSubscriberDelaysNoLiveQuery(t *testing.T) {
	t.Parallel()
	s := openStore(t, pg.Database(t), Options{QueueFrames: 2})
	const q = "namespace:acme/Docs nodeType:Article"
	live := watchQuery(t, s, q)
	live.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	awaitFeed(t, s)
	_, blocked, _ := blockedChanges(t, s)
	other := watchStream(t, "other changes", s.Changes())

	put(t, s, mesh.Node{Path: "acme/Docs/first", NodeType: "Article"})
	awaitClosed(t, blocked, "the Changes subscriber to block in its first notice")
	live.await(t, "Added acme/Docs/first", kindOn(mesh.Added, "acme/Docs/first"))
	for _, p := range []string{"acme/Docs/p0", "acme/Docs/p1", "acme/Docs/p2", "acme/Docs/p3", "acme/Docs/p4"} {
		put(t, s, mesh.Node{Path: p, NodeType: "Article"})
		live.await(t, "Added "+p, kindOn(mesh.Added, p))
		other.await(t, "the notice of "+p, noticeOf(p))
	}
}

// A Changes subscriber that falls behind by more than Options.QueueFrames
// gets one gap notice (empty Path and NodeType, Op WriteUpdate) in place of
// the notices it missed, and completes on Close. The control is the notice
// queued within the bound, which is delivered as it was.
func TestAChangesSubscriberThatFallsBehindGetsOneGapNoticeInsteadOfTheNoticesItMissed(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	s, err := Open(t.Context(), url, Options{QueueFrames: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	live := watchQuery(t, s, "namespace:acme/Docs nodeType:Article")
	live.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	awaitFeed(t, s)
	gated, blocked, release := blockedChanges(t, s)
	other := watchStream(t, "other changes", s.Changes())

	paths := []string{"acme/Docs/a", "acme/Docs/b", "acme/Docs/c", "acme/Docs/d"}
	// The first write's notice blocks the subscriber before the others are
	// written, so that what it misses is exactly the rest.
	put(t, s, mesh.Node{Path: paths[0], NodeType: "Article"})
	awaitClosed(t, blocked, "the Changes subscriber to block in its first notice")
	for _, p := range paths[1:] {
		put(t, s, mesh.Node{Path: p, NodeType: "Article"})
	}
	// The listener handles notices one at a time, re-reading live queries
	// before it announces: once the live query has the last write, every
	// earlier notice has been queued for the blocked subscriber. (The other
	// subscriber cannot say so: with a bound of 1 it may collapse too.)
	last := paths[len(paths)-1]
	live.await(t, "Added "+last, kindOn(mesh.Added, last))
	release()
	gated.await(t, "the gap notice", func(n mesh.ChangeNotice) bool { return n.Path == "" })
	got := gated.values(t)
	require.Len(t, got, 2, "the first notice, then one gap notice for the rest: %v", got)
	assert.Equal(t, paths[0], got[0].Path)
	assert.Equal(t, mesh.ChangeNotice{Op: mesh.WriteUpdate}, got[1])

	require.NoError(t, s.Close())
	require.NoError(t, gated.end(t), "Close completes a subscriber that fell behind")
	require.NoError(t, other.end(t))
}

func TestANegativeChangesQueueBoundIsRefused(t *testing.T) {
	t.Parallel()
	_, err := Open(t.Context(), pg.Database(t), Options{QueueFrames: -1})
	assert.ErrorContains(t, err, "QueueFrames")
}
