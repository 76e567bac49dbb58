package memstore

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/meshrx/meshrx/mesh"
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

	o    rx.Observer[mesh.Change]
	box  outbox[mesh.Change]
	done bool // unsubscribed or ended; guarded by Store.liveMu
}

// reads reports whether a write to schema can concern q.
func (lq *liveQuery) reads(schema string, global bool) bool {
	if lq.anySchema {
		return !global
	}
	return lq.schemas[schema]
}

// flush delivers the queued frames, outside every store lock.
func (lq *liveQuery) flush() {
	lq.box.flush(func(f frame[mesh.Change]) {
		if f.end {
			lq.o.OnCompleted()
			return
		}
		lq.o.OnNext(f.v)
	})
}

// registry indexes the live queries by the node types they are constrained
// to, so a write reaches only the queries its node's type can concern.
type registry struct {
	byType  map[string]map[*liveQuery]struct{} // lower-cased type → constrained queries
	anyType map[*liveQuery]struct{}            // unconstrained queries
	n       int
}

func newRegistry() registry {
	return registry{byType: map[string]map[*liveQuery]struct{}{}, anyType: map[*liveQuery]struct{}{}}
}

func (r *registry) len() int { return r.n }

func (r *registry) add(lq *liveQuery) {
	r.n++
	if lq.types == nil {
		r.anyType[lq] = struct{}{}
		return
	}
	for _, t := range lq.types {
		set := r.byType[t]
		if set == nil {
			set = map[*liveQuery]struct{}{}
			r.byType[t] = set
		}
		set[lq] = struct{}{}
	}
}

func (r *registry) remove(lq *liveQuery) {
	if lq.types == nil {
		if _, ok := r.anyType[lq]; ok {
			delete(r.anyType, lq)
			r.n--
		}
		return
	}
	removed := false
	for _, t := range lq.types {
		if set, ok := r.byType[t]; ok {
			if _, in := set[lq]; in {
				removed = true
				delete(set, lq)
				if len(set) == 0 {
					delete(r.byType, t)
				}
			}
		}
	}
	if removed {
		r.n--
	}
}

// clear removes and returns every query.
func (r *registry) clear() []*liveQuery {
	var all []*liveQuery
	for lq := range r.anyType {
		all = append(all, lq)
	}
	seen := map[*liveQuery]bool{}
	for _, set := range r.byType {
		for lq := range set {
			if !seen[lq] {
				seen[lq] = true
				all = append(all, lq)
			}
		}
	}
	for _, lq := range all {
		lq.done = true
	}
	*r = newRegistry()
	return all
}

// concerned calls f with each query a write of a node of the given types
// (lower-cased; old and new when the type changed) may concern.
func (r *registry) concerned(typeA, typeB string, f func(*liveQuery)) {
	for lq := range r.anyType {
		f(lq)
	}
	for lq := range r.byType[typeA] {
		f(lq)
	}
	if typeB == typeA {
		return
	}
	for lq := range r.byType[typeB] {
		if _, also := r.byType[typeA][lq]; !also {
			f(lq)
		}
	}
}

// register reads lq's Initial and enters it among the live queries, in one
// step with respect to writes: every write lands either in the Initial or as
// a frame after it, never both, never neither. The Initial is delivered after
// the store's lock is released.
func (s *Store) register(lq *liveQuery) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		lq.o.OnError(unavailable("query " + lq.q.String()))
		return
	}
	items := s.read(lq)
	s.liveMu.Lock()
	if !lq.done {
		s.live.add(lq)
	}
	s.liveMu.Unlock()
	lq.box.push(frame[mesh.Change]{v: mesh.Change{Kind: mesh.Initial, Items: items, Partitions: lq.parts}})
	s.mu.RUnlock()
	lq.flush()
}

// unregister removes lq; frames already queued for it are dropped by rx.
func (s *Store) unregister(lq *liveQuery) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	if !lq.done {
		lq.done = true
		s.live.remove(lq)
	}
}

// classify queues, for every live query the write concerns, the frame it
// makes: Added when the node enters the result, Updated when it stays in,
// Removed when it leaves. old and cur are the node before and after (nil when
// absent; both have the same path). A query whose node types, partitions or
// anchor cannot include the node is settled without matching. The caller
// holds mu for writing; it returns the queries to flush once mu is released.
func (s *Store) classify(schema string, global bool, old, cur *mesh.Node) []*liveQuery {
	some := cur
	if some == nil {
		some = old
	}
	typeA, typeB := strings.ToLower(some.NodeType), strings.ToLower(some.NodeType)
	if old != nil {
		typeA = strings.ToLower(old.NodeType)
	}
	path := strings.ToLower(some.Path)
	ns, _ := mesh.SplitPath(path)
	parts := []string{schema}
	var touched []*liveQuery
	evaluated := 0

	s.liveMu.Lock()
	total := s.live.len()
	s.live.concerned(typeA, typeB, func(lq *liveQuery) {
		if !lq.reads(schema, global) || !lq.anchor.admits(path, ns) {
			return
		}
		evaluated++
		wasIn := old != nil && lq.q.Matches(*old)
		nowIn := cur != nil && lq.q.Matches(*cur)
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
		lq.box.push(frame[mesh.Change]{v: c})
		touched = append(touched, lq)
	})
	s.liveMu.Unlock()

	s.evaluations.Add(int64(evaluated))
	s.skipped.Add(int64(total - evaluated))
	return touched
}

// frame is one queued delivery: a value, or the end of the stream.
type frame[T any] struct {
	v   T
	end bool
}

// outbox queues deliveries in the order they were decided (under the store's
// lock) and delivers them later, outside it, one flush at a time: a flush
// that finds another running leaves its frames to that one, so order holds
// and an observer that writes to the store from OnNext does not deadlock.
type outbox[T any] struct {
	mu    sync.Mutex
	queue []frame[T]
	wip   atomic.Int64
}

func (b *outbox[T]) push(f frame[T]) {
	b.mu.Lock()
	b.queue = append(b.queue, f)
	b.mu.Unlock()
}

func (b *outbox[T]) flush(deliver func(frame[T])) {
	if b.wip.Add(1) != 1 {
		return // the running flush will deliver what was pushed
	}
	missed := int64(1)
	for {
		b.mu.Lock()
		batch := b.queue
		b.queue = nil
		b.mu.Unlock()
		for _, f := range batch {
			deliver(f)
		}
		missed = b.wip.Add(-missed)
		if missed == 0 {
			return
		}
	}
}
