package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/mesh"
)

// A change notice can carry its row (migration 0005), and a live query can
// patch its result from it without reading the path again, but only if no
// read of the query's own may have seen a later commit of that path: a
// notice for a commit the read already saw, arriving after the read, would
// otherwise take the result back to the older row. Notices arrive in commit
// order, so a fence settles it: a NOTIFY with a number, on a channel only
// this store listens to, sent after the read ended. Every notice the
// listener receives after that fence is of a commit the read did not see,
// and its row is applied as it stands. Until the fence arrives, and from
// the moment another read is due, notices make the query read the path, as
// before. One goroutine sends the fences in increasing order, one for any
// number of reads that ended before it started (10,000 Initials need not
// send 10,000 NOTIFYs), and a query waits for its fence to be sent before
// delivering what it read (while its read's budget lasts): a write made
// after seeing those frames commits after the fence, so its row is applied.

// fences are the store's fences.
type fences struct {
	channel string
	want    chan struct{} // capacity 1: a fence is owed
	seen    atomic.Int64  // the highest fence the listener has received

	mu     sync.Mutex
	next   int64         // the number the next fence sent will have
	sent   int64         // the highest fence whose NOTIFY has returned (or failed)
	sentCh chan struct{} // closed when sent advances
}

func newFences() *fences {
	var id [8]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	return &fences{channel: "mesh_live_fence_" + hex.EncodeToString(id[:]), want: make(chan struct{}, 1),
		next: 1, sentCh: make(chan struct{})}
}

// request returns the number of a fence whose NOTIFY starts after this
// call, and makes sure one is sent.
func (f *fences) request() int64 {
	f.mu.Lock()
	n := f.next
	f.mu.Unlock()
	select {
	case f.want <- struct{}{}:
	default: // one is owed already; it takes a number no lower than n
	}
	return n
}

// received records a fence from the listener's connection.
func (f *fences) received(payload string) {
	n, err := strconv.ParseInt(payload, 10, 64)
	if err != nil {
		return // not one of ours: nothing is trusted on its account
	}
	f.mu.Lock()
	taken := f.next // every fence sent so far has a lower number
	f.mu.Unlock()
	if n >= taken {
		return // no fence was sent with it: believing it would trust rows early
	}
	for {
		old := f.seen.Load()
		if n <= old || f.seen.CompareAndSwap(old, n) {
			return
		}
	}
}

// awaitSent waits until fence n has been sent, at most budget on clk or
// until ctx ends; past that the query delivers its frames anyway (its rows
// are trusted whenever the fence arrives). It reports whether the fence was
// sent.
func (f *fences) awaitSent(ctx context.Context, clk clock.Clock, n int64, budget time.Duration) bool {
	ctx, cancel := clk.WithTimeout(ctx, budget)
	defer cancel()
	for {
		f.mu.Lock()
		sent, ch := f.sent, f.sentCh
		f.mu.Unlock()
		if sent >= n {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// sendFences is the fence goroutine: one NOTIFY per request, coalesced,
// each within Budgets.Operation. A fence that fails to go out leaves the
// queries waiting for it reading written paths until a later one arrives.
func (s *Store) sendFences() {
	defer s.wg.Done()
	f := s.fences
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-f.want:
		}
		f.mu.Lock()
		n := f.next
		f.next++
		f.mu.Unlock()
		ctx, cancel, explain := s.bounded(s.ctx, s.budgets.Operation, "sending a live-query fence")
		_, err := s.pool.Exec(ctx, "-- fence\nSELECT pg_notify($1, $2)", f.channel, strconv.FormatInt(n, 10))
		cancel()
		if err != nil && s.ctx.Err() == nil {
			s.log.Warn("pgstore: sending a live-query fence failed; live queries re-read written paths meanwhile", "err", explain(err))
		}
		f.mu.Lock()
		f.sent = n
		close(f.sentCh)
		f.sentCh = make(chan struct{})
		f.mu.Unlock()
	}
}

// fenceAfterRead gives lq a fence after its read, which started at
// started, and waits for it to be sent while the read's budget
// (Budgets.QueryInitial) lasts: the fence only spares later reads, and the
// frames (an Initial among them) are owed within that budget.
func (s *Store) fenceAfterRead(ctx context.Context, lq *liveQuery, started time.Time) {
	n := s.fences.request()
	lq.mu.Lock()
	lq.fence = n
	lq.mu.Unlock()
	left := max(s.budgets.QueryInitial-s.clk.Since(started), 0)
	if !s.fences.awaitSent(ctx, s.clk, n, left) && ctx.Err() == nil {
		s.log.Debug("pgstore: a live-query fence was not sent within its read's budget; the query delivers its frames anyway",
			"query", lq.q.String(), "budget", s.budgets.QueryInitial)
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
