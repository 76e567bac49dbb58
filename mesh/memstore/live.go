package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/internal/liveindex"
	"github.com/meshrx/meshrx/mesh/internal/mailbox"
	"github.com/meshrx/meshrx/rx"
)

// liveQuery is one subscription of the store's provider: the query, what it
// reads, and the frames waiting to be delivered to its observer.
type liveQuery struct {
	q         *mesh.Query
	types     []string        // lower-cased node types the query can match; nil: any
	schemas   map[string]bool // the schemas it reads, when fixed
	anySchema bool            // it reads every partition, including ones created later
	parts     []string        // the schemas its Initial read, reported on the frame
	anchor    anchorFilter

	o   rx.Observer[mesh.Change]
	box mailbox.Mailbox[mesh.Change]
	// top is a limited query's result as last delivered (nil for one
	// without a limit): a write cannot say alone whether a node enters
	// the first N or pushes one out, so its frames are computed against
	// a read. Only the goroutine delivering to o touches it.
	top   map[string]mesh.Node
	done  bool                         // unsubscribed or ended; guarded by Store.liveMu
	entry *liveindex.Entry[*liveQuery] // its place in Store.live; guarded by Store.liveMu
}

// key is what the store's index of live queries files lq under.
func (lq *liveQuery) key() liveindex.Key {
	k := liveindex.Key{AllPartitions: lq.anySchema, Types: lq.types, Query: lq.q}
	if !lq.anySchema {
		k.Schemas = lq.parts
	}
	return k
}

// reads reports whether a write to schema can concern q.
func (lq *liveQuery) reads(schema string, global bool) bool {
	if lq.anySchema {
		return !global
	}
	return lq.schemas[schema]
}

// register reads lq's Initial and enters it among the live queries, in one
// step with respect to writes: every write lands either in the Initial or as
// a frame after it, never both, never neither. The Initial is delivered on
// the subscribing goroutine after the store's lock is released; frames that
// writes queue meanwhile wait for it, then go to a drain of their own.
//
// Its wait for the lock is bounded by Budgets.QueryInitial on the store's
// clock and by ctx (the subscription): a read queued behind a writer waits
// for every read ahead of that writer too, however large. On a budget that
// runs out it fails with a *mesh.UnavailableError naming the lock around a
// *mesh.ProviderStalledError, what a fan-in says of a silent provider.
func (s *Store) register(ctx context.Context, lq *liveQuery) {
	if err := s.rlockWithin(ctx); err != nil {
		op := "query " + lq.q.String() + ": waiting for the store's lock"
		if ctx.Err() != nil {
			lq.o.OnError(&mesh.UnavailableError{Op: op, Err: ctx.Err()})
			return
		}
		lq.o.OnError(&mesh.UnavailableError{Op: op, Err: &mesh.ProviderStalledError{
			Providers: []string{providerName}, Budget: s.budgets.QueryInitial, Query: lq.q.String()}})
		return
	}
	if s.closed {
		s.mu.RUnlock()
		lq.o.OnError(unavailable("query " + lq.q.String()))
		return
	}
	items := s.read(lq)
	lq.box.Hold()
	s.liveMu.Lock()
	if !lq.done {
		lq.entry = s.live.Add(lq.key(), lq)
	}
	s.liveMu.Unlock()
	s.mu.RUnlock()
	delivered := false
	defer func() {
		// An observer that panicked on the Initial: its Subscribe never
		// returned a subscription to end, so the query must not stay
		// registered (and held, frames collapsing) for the store's life.
		// The panic goes on.
		if !delivered {
			s.unregister(lq)
		}
	}()
	items = lq.answer(items)
	if lq.q.Limit > 0 {
		lq.top = resultOf(items)
	}
	lq.o.OnNext(mesh.Change{Kind: mesh.Initial, Items: items, Partitions: lq.parts})
	delivered = true
	if lq.box.Release() {
		go s.drain(lq)
	}
}

// drain delivers lq's queued frames until none is left; see mailbox.
func (s *Store) drain(lq *liveQuery) {
	lq.box.Drain(lq.o.OnNext, func() []mesh.Change { return s.collapse(lq) }, lq.o.OnCompleted,
		func(p any, stack []byte) {
			// The observer panicked: only this query ends (see
			// mesh.ObserverPanicError).
			s.unregister(lq)
			mailbox.EndPanicked(s.log, "query "+lq.q.String(), lq.o.OnError, p, stack)
		})
}

// collapse reads lq's current result for the frames that stand for those
// its subscriber fell behind on: a Reset, or for a limited query what
// changed in its first N. The read and the emptying of its queue are one
// step with respect to writes (which queue under mu), so every write is in
// these frames or in one after them.
func (s *Store) collapse(lq *liveQuery) []mesh.Change {
	s.mu.RLock()
	lq.box.Reset()
	if s.closed {
		s.mu.RUnlock()
		return nil
	}
	items := s.read(lq)
	parts := lq.parts
	s.mu.RUnlock()
	items = lq.answer(items)
	if lq.top != nil {
		return lq.topChanges(items, parts)
	}
	s.resets.Add(1)
	return []mesh.Change{{Kind: mesh.Reset, Items: items, Partitions: parts}}
}

// topChanges returns the Added, Updated and Removed frames (in that order,
// empty ones left out) that turn a limited query's last delivered result
// into items, and keeps items as the result.
func (lq *liveQuery) topChanges(items []mesh.Node, parts []string) []mesh.Change {
	var added, updated, removed []mesh.Node
	next := resultOf(items)
	for _, n := range items {
		old, had := lq.top[n.Path]
		switch {
		case !had:
			added = append(added, n)
		case old.Version != n.Version || !old.LastModified.Equal(n.LastModified) || !sameVisible(old, n):
			// Not the version alone: a node deleted and written again
			// starts at version 1 once more.
			updated = append(updated, n)
		}
	}
	for p, n := range lq.top {
		if _, kept := next[p]; !kept {
			removed = append(removed, n)
		}
	}
	slices.SortFunc(removed, func(a, b mesh.Node) int { return strings.Compare(a.Path, b.Path) })
	lq.top = next
	var out []mesh.Change
	for _, c := range []mesh.Change{{Kind: mesh.Added, Items: added}, {Kind: mesh.Updated, Items: updated}, {Kind: mesh.Removed, Items: removed}} {
		if len(c.Items) > 0 {
			c.Partitions = parts
			out = append(out, c)
		}
	}
	return out
}

// resultOf keys a result by path.
func resultOf(items []mesh.Node) map[string]mesh.Node {
	m := make(map[string]mesh.Node, len(items))
	for _, n := range items {
		m[n.Path] = n
	}
	return m
}

// unregister removes lq; nothing more is delivered to it.
func (s *Store) unregister(lq *liveQuery) {
	s.liveMu.Lock()
	if !lq.done {
		lq.done = true
		if lq.entry != nil {
			s.live.Remove(lq.entry)
		}
	}
	s.liveMu.Unlock()
	lq.box.Leave()
}

// classify queues, for every live query the write concerns, the frame it
// makes: Added when the node enters the result, Updated when it stays in,
// Removed when it leaves. old and cur are the node before and after (nil when
// absent; both have the same path). The index of live queries hands it only
// the queries filed under the write's schema, node types and path; of
// those, one whose partitions or anchor cannot include the node is settled
// without matching. Skipped counts every pair settled without matching,
// those the index never visited included (total minus evaluated), so it
// keeps its meaning whatever the index spares. The caller holds mu for
// writing; it returns the queries whose drain must be started once mu is
// released.
func (s *Store) classify(schema string, global bool, old, cur *mesh.Node) []*liveQuery {
	some := cur
	if some == nil {
		some = old
	}
	path := strings.ToLower(some.Path)
	ns, _ := mesh.SplitPath(path)
	typeB := strings.ToLower(some.NodeType)
	typeA := typeB
	if old != nil && old.NodeType != some.NodeType {
		typeA = strings.ToLower(old.NodeType)
	}
	w := liveindex.Write{Schema: schema, Partition: !global, Typed: true, TypeA: typeA, TypeB: typeB, Path: path}
	parts := []string{schema}
	var start []*liveQuery
	evaluated := 0

	s.liveMu.Lock()
	total := s.live.Len()
	s.live.Visit(w, func(lq *liveQuery) {
		if !lq.reads(schema, global) || !lq.anchor.admits(path, ns) {
			return
		}
		if lq.types != nil && !slices.Contains(lq.types, typeA) && !slices.Contains(lq.types, typeB) {
			return // filed coarsely: the query has many types
		}
		evaluated++
		wasIn := old != nil && lq.q.Matches(*old)
		nowIn := cur != nil && lq.q.Matches(*cur)
		if lq.q.Limit > 0 {
			// Whether the node is in the first N, and which one it pushes
			// out or lets in, only a read says: the drain reads once for
			// every write queued meanwhile (collapse).
			if (wasIn || nowIn) && lq.box.Collapse() {
				start = append(start, lq)
			}
			return
		}
		var c mesh.Change
		switch {
		case wasIn && nowIn:
			c = mesh.Change{Kind: mesh.Updated, Items: []mesh.Node{*cur}, Partitions: parts}
		case nowIn:
			c = mesh.Change{Kind: mesh.Added, Items: []mesh.Node{*cur}, Partitions: parts}
		case wasIn:
			c = mesh.Change{Kind: mesh.Removed, Items: []mesh.Node{*old}, Partitions: parts}
		default:
			return
		}
		if lq.box.Push(c) {
			start = append(start, lq)
		}
	})
	s.liveMu.Unlock()

	s.evaluations.Add(int64(evaluated))
	s.skipped.Add(int64(total - evaluated))
	return start
}
