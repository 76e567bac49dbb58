package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/meshrx/meshrx/mesh"
)

// A change notice can carry its row (migration 0005), and a live query can
// patch its result from it without reading the path again, but only if no
// read of the query's own may have seen a later commit of that path: a
// notice for a commit the read already saw, arriving after the read, would
// otherwise take the result back to the older row. Notices arrive in commit
// order, so a fence settles it: after each read, before sending what it
// read, a live query sends a fence, a NOTIFY on the store's own channel
// naming a number registered to the query. Every notice the listener
// receives after that fence is of a commit the read did not see, and its
// row is applied as it stands. Until the fence arrives, and from the
// moment another read is due, notices make the query read the path, as
// before. Because the fence commits before the query's frames are sent, a
// write made after seeing them is always applied from its row.

// fences registers the store's fences: numbers sent on a channel only this
// store listens to, each registered to the live query that sent it.
type fences struct {
	channel string

	mu      sync.Mutex
	next    int64
	waiting map[int64]*liveQuery // at most one per live query: its latest fence
}

func newFences() *fences {
	var id [8]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	return &fences{channel: "mesh_live_fence_" + hex.EncodeToString(id[:]), next: 1, waiting: map[int64]*liveQuery{}}
}

// add registers a new fence for lq, replacing its previous one.
func (f *fences) add(lq *liveQuery) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.next
	f.next++
	lq.mu.Lock()
	if lq.fence != 0 && f.waiting[lq.fence] == lq {
		delete(f.waiting, lq.fence)
	}
	lq.fence, lq.trusted = n, false
	lq.mu.Unlock()
	f.waiting[n] = lq
	return n
}

// drop forgets lq's fence (the query ended, or its fence failed to go out).
func (f *fences) drop(lq *liveQuery) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lq.mu.Lock()
	n := lq.fence
	lq.mu.Unlock()
	if f.waiting[n] == lq {
		delete(f.waiting, n)
	}
}

// received settles a fence from the listener's connection: its query
// trusts the rows of the notices after it, unless a read has become due
// since (take cleared its fence).
func (f *fences) received(payload string) {
	n, err := strconv.ParseInt(payload, 10, 64)
	if err != nil {
		return // not ours: nothing is trusted on its account
	}
	f.mu.Lock()
	lq := f.waiting[n]
	delete(f.waiting, n)
	f.mu.Unlock()
	if lq == nil {
		return
	}
	lq.mu.Lock()
	if lq.fence == n {
		lq.trusted = true
	}
	lq.mu.Unlock()
}

// sendFence sends a fence for lq after its read, within Budgets.Operation.
// If it cannot, lq keeps reading written paths; its next read tries again.
func (s *Store) sendFence(ctx context.Context, lq *liveQuery) {
	n := s.fences.add(lq)
	ctx, cancel, explain := bounded(ctx, s.budgets.Operation, "sending a live-query fence")
	defer cancel()
	if _, err := s.pool.Exec(ctx, "-- fence\nSELECT pg_notify($1, $2)", s.fences.channel, strconv.FormatInt(n, 10)); err != nil {
		s.fences.drop(lq)
		if ctx.Err() == nil {
			s.log.Warn("pgstore: sending a live-query fence failed; the query re-reads written paths meanwhile", "query", lq.q.String(), "err", explain(err))
		}
	}
}

// noticeRow is the row a change notice carries (migration 0005).
type noticeRow struct {
	Namespace    string          `json:"namespace"`
	ID           string          `json:"id"`
	Path         *string         `json:"path"`
	Name         *string         `json:"name"`
	NodeType     *string         `json:"node_type"`
	MainNode     *string         `json:"main_node"`
	Content      json.RawMessage `json:"content"`
	ContentNull  *bool           `json:"content_null"` // SQL NULL, not the JSON value null
	Version      int64           `json:"version"`
	State        int             `json:"state"`
	LastModified *time.Time      `json:"last_modified"`
}

// node returns the row as scanNode would read it, and false when the
// notice cannot stand for a read of it.
func (r *noticeRow) node() (mesh.Node, bool) {
	if r == nil || r.ID == "" || r.LastModified == nil || r.ContentNull == nil || r.State < 0 || r.State > 255 {
		return mesh.Node{}, false
	}
	n := mesh.Node{Namespace: r.Namespace, ID: r.ID, Path: deref(r.Path), Name: deref(r.Name),
		NodeType: deref(r.NodeType), MainNode: deref(r.MainNode), Version: r.Version,
		State: mesh.State(r.State), LastModified: r.LastModified.UTC()}
	if n.Path == "" {
		n.Path = mesh.JoinPath(n.Namespace, n.ID)
	}
	if !*r.ContentNull {
		n.Content = json.RawMessage(r.Content)
	}
	return n, true
}
