package memstore

import (
	"strings"

	"github.com/meshrx/meshrx/mesh"
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

	o    rx.Observer[mesh.Change]
	box  mailbox.Mailbox[mesh.Change]
	done bool // unsubscribed or ended; guarded by Store.liveMu
}

// reads reports whether a write to schema can concern q.
func (lq *liveQuery) reads(schema string, global bool) bool {
	if lq.anySchema {
		return !global
	}
	return lq.schemas[schema]
}

// liveSet is the set of live queries, indexed by the node types they are
// constrained to, so a write reaches only the queries its node's type can
// concern.
type liveSet struct {
	byType  map[string]map[*liveQuery]struct{} // lower-cased type → constrained queries
	anyType map[*liveQuery]struct{}            // unconstrained queries
	n       int
}

func newLiveSet() liveSet {
	return liveSet{byType: map[string]map[*liveQuery]struct{}{}, anyType: map[*liveQuery]struct{}{}}
}

func (r *liveSet) len() int { return r.n }

func (r *liveSet) add(lq *liveQuery) {
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

func (r *liveSet) remove(lq *liveQuery) {
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

// each calls f with every query once.
func (r *liveSet) each(f func(*liveQuery)) {
	for lq := range r.anyType {
		f(lq)
	}
	seen := map[*liveQuery]bool{}
	for _, set := range r.byType {
		for lq := range set {
			if !seen[lq] {
				seen[lq] = true
				f(lq)
			}
		}
	}
}

// clear removes and returns every query.
func (r *liveSet) clear() []*liveQuery {
	var all []*liveQuery
	r.each(func(lq *liveQuery) { all = append(all, lq) })
	for _, lq := range all {
		lq.done = true
	}
	*r = newLiveSet()
	return all
}

// concerned calls f with each query a write of a node of the given types
// (lower-cased; old and new when the type changed) may concern.
func (r *liveSet) concerned(typeA, typeB string, f func(*liveQuery)) {
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
// a frame after it, never both, never neither. The Initial is delivered on
// the subscribing goroutine after the store's lock is released; frames that
// writes queue meanwhile wait for it, then go to a drain of their own.
func (s *Store) register(lq *liveQuery) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		lq.o.OnError(unavailable("query " + lq.q.String()))
		return
	}
	items := s.read(lq)
	lq.box.Hold()
	s.liveMu.Lock()
	if !lq.done {
		s.live.add(lq)
	}
	s.liveMu.Unlock()
	s.mu.RUnlock()
	lq.o.OnNext(mesh.Change{Kind: mesh.Initial, Items: lq.answer(items), Partitions: lq.parts})
	if lq.box.Release() {
		go s.drain(lq)
	}
}

// drain delivers lq's queued frames until none is left; see mailbox.
func (s *Store) drain(lq *liveQuery) {
	lq.box.Drain(lq.o.OnNext, func() (mesh.Change, bool) { return s.collapse(lq) }, lq.o.OnCompleted)
}

// collapse reads lq's current result for the Reset that stands for the
// frames its subscriber fell behind on. The read and the emptying of its
// queue are one step with respect to writes (which queue under mu), so
// every write is in the Reset or in a frame after it.
func (s *Store) collapse(lq *liveQuery) (mesh.Change, bool) {
	s.mu.RLock()
	lq.box.Reset()
	if s.closed {
		s.mu.RUnlock()
		return mesh.Change{}, false
	}
	items := s.read(lq)
	parts := lq.parts
	s.mu.RUnlock()
	s.resets.Add(1)
	return mesh.Change{Kind: mesh.Reset, Items: lq.answer(items), Partitions: parts}, true
}

// unregister removes lq; nothing more is delivered to it.
func (s *Store) unregister(lq *liveQuery) {
	s.liveMu.Lock()
	if !lq.done {
		lq.done = true
		s.live.remove(lq)
	}
	s.liveMu.Unlock()
	lq.box.Leave()
}

// classify queues, for every live query the write concerns, the frame it
// makes: Added when the node enters the result, Updated when it stays in,
// Removed when it leaves. old and cur are the node before and after (nil when
// absent; both have the same path). A query whose node types, partitions or
// anchor cannot include the node is settled without matching. The caller
// holds mu for writing; it returns the queries whose drain must be started
// once mu is released.
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
	var start []*liveQuery
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
		if lq.box.Push(c) {
			start = append(start, lq)
		}
	})
	s.liveMu.Unlock()

	s.evaluations.Add(int64(evaluated))
	s.skipped.Add(int64(total - evaluated))
	return start
}
