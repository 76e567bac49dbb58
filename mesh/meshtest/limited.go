package meshtest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// limitedRewrite: a limited live query whose subscriber was busy while a
// node of its first N was deleted and written again with other content
// shows the new node. The new node starts again at version 1, so a store
// that tells a changed node by its version alone sends nothing and leaves
// the subscriber holding the deleted node's content. Negative control
// (run): pgstore's sameNode deciding by version alone, no frame showing
// acme/Top/a came within the bound. Its earlier fence (the Added of a
// later write) failed in CI when that write joined a's re-read: the Added
// came first and the test read a's content before its Updated arrived
// (made certain, by hand, by delaying the subscriber's Updated frames).
func (s *suite) limitedRewrite(t testing.TB, svc mesh.Store) {
	const q = "namespace:acme/Top limit:10"
	put(t, svc, withContent(node("acme/Top/a", "Item"), `{"v":"old"}`))
	put(t, svc, node("acme/Top/b", "Item"))

	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	blocked := make(chan struct{})
	var blockOnce sync.Once
	var mu sync.Mutex
	content := map[string]string{} // the subscriber's view: path -> content
	frames := rx.NewReplaySubject[mesh.Change](0)
	sub := svc.Query(q).Subscribe(rx.NewObserver(func(c mesh.Change) {
		if c.Kind != mesh.Initial {
			blockOnce.Do(func() { close(blocked); <-release })
		}
		mu.Lock()
		switch c.Kind {
		case mesh.Initial, mesh.Reset:
			clear(content)
			fallthrough
		case mesh.Added, mesh.Updated:
			for _, n := range c.Items {
				content[n.Path] = string(n.Content)
			}
		case mesh.Removed:
			for _, n := range c.Items {
				delete(content, n.Path)
			}
		}
		mu.Unlock()
		frames.OnNext(c)
	}, frames.OnError, frames.OnCompleted))
	t.Cleanup(sub.Unsubscribe)
	firstOf(t, s.bound, "query "+q+": the Initial", frames)

	put(t, svc, node("acme/Top/c", "Item"))
	select {
	case <-blocked:
	case <-time.After(s.bound):
		require.FailNow(t, "the subscriber was never blocked", "waited %s for the frame of the first write", s.bound)
	}
	del(t, svc, "acme/Top/a")
	put(t, svc, withContent(node("acme/Top/a", "Item"), `{"v":"new"}`))
	unblock()

	// The frame that shows acme/Top/a written again; a store that tells a
	// changed node by its version alone never sends one. (A later write is
	// no fence here: the frames of one re-read come as Added, Updated,
	// Removed, so when the re-read also holds a later node, its Added comes
	// before a's Updated.)
	firstOf(t, s.bound, "query "+q+": a frame showing acme/Top/a written again", rx.Filter[mesh.Change](frames, func(c mesh.Change) bool {
		return c.Kind != mesh.Initial && c.Kind != mesh.Removed && slices.ContainsFunc(c.Items, func(n mesh.Node) bool { return n.Path == "acme/Top/a" })
	}))
	mu.Lock()
	shown := content["acme/Top/a"]
	mu.Unlock()
	assert.JSONEq(t, `{"v":"new"}`, shown,
		"the subscriber shows acme/Top/a as written again, not as it was before its delete")
}

// limitedFrames: a limited live query keeps its first N as writes push
// nodes in and out: a node that sorts into them enters and pushes the
// last one out, one beyond them sends nothing, one that leaves them lets
// the next one in.
func (s *suite) limitedFrames(t testing.TB, svc mesh.Store) {
	put(t, svc, node("acme/L/p1", "Item"))
	put(t, svc, node("acme/L/p3", "Item"))
	const q = "namespace:acme/L limit:2"
	w := watchQuery(t, s.bound, svc, q)
	initial := w.await(t, "the Initial", func(mesh.Change) bool { return true })
	require.Equal(t, []string{"acme/L/p1", "acme/L/p3"}, pathsOf(initial.Items))

	put(t, svc, node("acme/L/p2", "Item"))
	w.await(t, "Removed acme/L/p3, pushed out by acme/L/p2", kindOn(mesh.Removed, "acme/L/p3"))
	put(t, svc, node("acme/L/p4", "Item")) // beyond the first two: no frame
	put(t, svc, withContent(node("acme/L/p2", "Item"), `{"v":2}`))
	w.await(t, "Updated acme/L/p2", kindOn(mesh.Updated, "acme/L/p2"))
	del(t, svc, "acme/L/p1")
	w.await(t, "Removed acme/L/p1", kindOn(mesh.Removed, "acme/L/p1"))
	w.await(t, "Added acme/L/p3, let in by the delete of acme/L/p1", kindOn(mesh.Added, "acme/L/p3"))

	var got []string
	for _, c := range w.received(t) {
		got = append(got, describe(c))
	}
	assert.Equal(t, []string{
		"initial [acme/L/p1 acme/L/p3] partitions=[acme]",
		"added [acme/L/p2] partitions=[acme]",
		"removed [acme/L/p3] partitions=[acme]",
		"updated [acme/L/p2] partitions=[acme]",
		"added [acme/L/p3] partitions=[acme]",
		"removed [acme/L/p1] partitions=[acme]",
	}, got, "one frame per kind of change to the first two, in write order; the write beyond them sends none")
}
