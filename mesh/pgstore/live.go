package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/internal/liveindex"
	"github.com/meshrx/meshrx/mesh/internal/mailbox"
	"github.com/meshrx/meshrx/rx"
)

// pending is the read a live query owes its subscriber, in increasing
// strength: a stronger one absorbs a weaker one scheduled before it runs.
type pending uint8

// maxPointPaths is how many written paths a live query re-checks one by one
// before it reads its whole result instead.
const maxPointPaths = 100

const (
	pendingNone    pending = iota
	pendingDiff            // re-read and send what changed
	pendingReset           // re-read and send the whole result as a Reset
	pendingInitial         // the first read, sent as the Initial
)

// liveQuery is one subscription of the store's provider. It holds no
// goroutine while idle: a notice that concerns it starts one (a runner),
// which serves the reads owed one at a time and ends when none is left;
// notices that arrive meanwhile coalesce into one more read. An idle live
// query is this struct, its entry in the index and its subscription.
type liveQuery struct {
	q      *mesh.Query
	anchor *mesh.Query // q without filter and free text: where q can look
	plan   plan
	types  map[string]bool // lower-cased node types the query can match; nil: any
	fixed  map[string]bool // the schemas it reads, unless plan.anySchema
	tables map[string]bool // the node tables it reads

	entry *liveindex.Entry[*liveQuery] // its place in Store.live; guarded by Store.mu

	// Set by runLive before the first runner starts, read-only after.
	sub     context.Context // the subscription's: done when the subscriber leaves
	o       rx.Observer[mesh.Change]
	stopEnd func() bool // stops the context.AfterFunc that ends it with sub

	// last is the result as last sent (nil until the Initial); only the
	// goroutine holding running touches it.
	last map[string]mesh.Node

	mu      sync.Mutex
	owed    pending
	dirty   []dirtyPath // written paths to re-check, for pendingDiff, each once; nil while idle
	readAll bool        // a pendingDiff that needs a full re-read
	fence   int64       // the fence after its last read (see fence.go); 0 while a read is due
	since   int64       // the arrival (Store.stamp) of the earliest notice owed; noNotice if none
	running bool        // a goroutine serves (or finishes) it: no other may
	ended   bool        // its subscription is over: it is finished, or its runner will finish it
}

// noNotice is liveQuery.since when no notice is owed.
const noNotice = -1

// written is what a live query knows of a written path: the row its notice
// carried (or that the notice deleted it), or nothing, and then it reads
// the path.
type written struct {
	carried bool // node (or, if gone, the node's absence) came with the notice
	gone    bool
	node    mesh.Node
}

// dirtyPath is one written path a live query re-checks.
type dirtyPath struct {
	path string
	written
}

func newLiveQuery(q *mesh.Query, p plan) *liveQuery {
	anchor := *q
	anchor.Filter, anchor.Text = nil, nil
	lq := &liveQuery{q: q, anchor: &anchor, plan: p, owed: pendingInitial, tables: map[string]bool{}, since: noNotice}
	if types, ok := q.NodeTypes(); ok {
		lq.types = make(map[string]bool, len(types))
		for _, t := range types {
			lq.types[strings.ToLower(t)] = true
		}
	}
	if !p.anySchema {
		lq.fixed = make(map[string]bool, len(p.schemas))
		for _, sc := range p.schemas {
			lq.fixed[sc] = true
		}
	}
	for _, t := range p.tables {
		lq.tables[t] = true
	}
	return lq
}

// owe schedules a read of at least strength p. For pendingDiff, path is the
// written path to re-check, or "" for a full re-read; row is what its
// notice carried (nil: nothing), used if the listener has received the
// query's fence (fenceSeen): no read of its own can have seen a later
// commit. at is when the notice arrived (Store.stamp), or noNotice. It
// returns true when the caller must start a runner for lq (Store.serve):
// none runs and the query has not ended.
func (lq *liveQuery) owe(p pending, path string, row *written, fenceSeen, at int64) (start bool) {
	lq.mu.Lock()
	lq.owed = max(lq.owed, p)
	if lq.since == noNotice {
		lq.since = at
	}
	if p == pendingDiff {
		known := -1
		for i := range lq.dirty { // at most maxPointPaths, mostly one
			if lq.dirty[i].path == path {
				known = i
				break
			}
		}
		if path == "" || (known < 0 && len(lq.dirty) >= maxPointPaths) {
			lq.readAll = true
		} else {
			var w written
			if row != nil && lq.fence != 0 && fenceSeen >= lq.fence {
				w = *row
			}
			if known >= 0 {
				lq.dirty[known].written = w // the latest notice of the path stands for the earlier ones
			} else {
				lq.dirty = append(lq.dirty, dirtyPath{path, w})
			}
		}
	}
	start = !lq.running && !lq.ended
	if start {
		lq.running = true
	}
	lq.mu.Unlock()
	return start
}

// take returns the read owed, with the written paths to re-check when
// patching the result will do (nil when the whole result must be read),
// and when the earliest notice it answers arrived (noNotice: none).
// When any of it reads the database, no notice's row is trusted until
// the fence the query sends after the read.
func (lq *liveQuery) take() (_ pending, _ []dirtyPath, since int64) {
	lq.mu.Lock()
	defer lq.mu.Unlock()
	p := lq.owed
	since, lq.since = lq.since, noNotice
	var paths []dirtyPath
	reads := p != pendingNone
	if p == pendingDiff && !lq.readAll && lq.q.Limit <= 0 { // a limit's top N needs the whole result
		reads = false
		paths = lq.dirty
		if paths == nil {
			paths = []dirtyPath{}
		}
		for _, d := range paths {
			reads = reads || !d.carried
		}
		slices.SortFunc(paths, func(a, b dirtyPath) int { return strings.Compare(a.path, b.path) })
	}
	if reads {
		lq.fence = 0
	}
	lq.owed, lq.readAll = pendingNone, false
	lq.dirty = nil // handed over in paths; an idle query holds none
	return p, paths, since
}

// concerns reports whether a write at path of a node of nodeType, in
// schema, can change the query's result. typed is false when the notice
// carries no node type: then only where the node is can rule it out.
func (lq *liveQuery) concerns(schema string, partition bool, path, nodeType string, typed bool) bool {
	if lq.plan.anySchema {
		if !partition {
			return false
		}
	} else if !lq.fixed[schema] {
		return false
	}
	if !lq.tables[mesh.TableFor(path)] {
		return false
	}
	ns, _ := mesh.SplitPath(path)
	if !lq.anchor.Matches(mesh.Node{Path: path, Namespace: ns}) {
		return false
	}
	return !typed || lq.types == nil || lq.types[strings.ToLower(nodeType)]
}

func newLiveIndex() *liveindex.Index[*liveQuery] { return liveindex.New[*liveQuery]() }

// keyOf is what the index of live queries files lq under.
func keyOf(lq *liveQuery) liveindex.Key {
	k := liveindex.Key{Schemas: lq.plan.schemas, AllPartitions: lq.plan.anySchema, Query: lq.q}
	if lq.plan.typed {
		k.Types = lq.plan.types
		if k.Types == nil {
			k.Types = []string{} // constrained to no type
		}
	}
	return k
}

// runLive registers lq and starts its first runner (the Initial). The
// query is served until the subscriber leaves (sub ends), a read fails
// (*mesh.UnavailableError) or the store closes (the query completes). It
// returns at once.
func (s *Store) runLive(sub context.Context, lq *liveQuery, o rx.Observer[mesh.Change]) {
	lq.sub, lq.o = sub, o
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		o.OnError(unavailable(lq.op(), ErrClosed))
		return
	}
	lq.entry = s.live.Add(keyOf(lq), lq)
	lq.running = true // the Initial is owed (newLiveQuery)
	s.wg.Add(2)       // the query until it is finished, and its first runner
	s.mu.Unlock()
	// Whoever holds running when the subscriber leaves finishes the query.
	lq.stopEnd = context.AfterFunc(sub, func() { s.end(lq) })
	go s.serve(lq)
}

func (lq *liveQuery) op() string { return "query " + lq.q.String() }

// startLocked starts a runner for lq, whose owe said to; s.mu is held and
// the store is not closed.
func (s *Store) startLocked(lq *liveQuery) {
	s.wg.Add(1)
	go s.serve(lq)
}

// serve is a runner: it serves lq's owed reads until none is left, or
// finishes lq when its subscription is over.
func (s *Store) serve(lq *liveQuery) {
	defer s.wg.Done()
	ctx, stop := s.scoped(lq.sub)
	defer stop()
	// finishing is set once this runner ends the query itself: a panic
	// after it (an observer's, in its OnCompleted or OnError) only needs
	// logging. One before it is the observer's on a frame.
	finishing := false
	defer func() {
		if p := recover(); p != nil {
			s.observerPanicked(lq, finishing, p, debug.Stack())
		}
	}()
	for {
		lq.mu.Lock()
		if lq.ended || ctx.Err() != nil {
			lq.ended = true
			lq.mu.Unlock()
			finishing = true
			s.finish(lq)
			return
		}
		if lq.owed == pendingNone {
			lq.running = false
			lq.mu.Unlock()
			return
		}
		lq.mu.Unlock()
		if err := s.serveOnce(ctx, lq); err != nil {
			lq.mu.Lock()
			lq.ended = true
			lq.mu.Unlock()
			s.log.Warn("pgstore: live query read failed; ending it", "query", lq.q.String(), "err", err)
			s.unregister(lq)
			lq.stopEnd()
			finishing = true
			defer s.wg.Done() // the query's
			lq.o.OnError(unavailable(lq.op(), err))
			return
		}
	}
}

// observerPanicked ends lq, whose observer panicked on its runner: a
// goroutine of the store, where the panic would end the process and every
// other subscriber with it. Only this query ends, with a
// *mesh.ObserverPanicError (see mailbox.EndPanicked). finished says the
// runner had already ended the query, and the panic came from its last
// notification: then there is only the panic to log.
func (s *Store) observerPanicked(lq *liveQuery, finished bool, p any, stack []byte) {
	if finished {
		s.log.Error("mesh: an observer panicked on a store's delivery goroutine; ending its subscription",
			"subscription", lq.op(), "panic", fmt.Sprint(p), "stack", string(stack))
		return
	}
	lq.mu.Lock()
	lq.ended = true
	lq.mu.Unlock()
	s.unregister(lq)
	lq.stopEnd()
	defer s.wg.Done() // the query's
	mailbox.EndPanicked(s.log, lq.op(), lq.o.OnError, p, stack)
}

// serveOnce takes the read owed and sends its frames. It returns the error
// that ends the query: a read that failed while ctx was not done.
func (s *Store) serveOnce(ctx context.Context, lq *liveQuery) error {
	owed, paths, since := lq.take()
	if owed == pendingNone {
		return nil
	}
	started := s.clk.Now()
	if paths != nil {
		frames, read, err := s.recheck(ctx, lq, paths, lq.last)
		if read && err == nil {
			s.fenceAfterRead(ctx, lq, started)
		}
		if err == nil {
			s.deliver(lq.o, since, frames)
			return nil
		}
		if ctx.Err() != nil {
			return nil // the runner finishes the query
		}
		s.log.Warn("pgstore: point read failed; reading the whole result", "query", lq.q.String(), "err", err)
	}
	items, parts, err := s.readRetrying(ctx, lq.q, lq.plan)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	s.fenceAfterRead(ctx, lq, started)
	switch owed {
	case pendingInitial:
		lq.o.OnNext(mesh.Change{Kind: mesh.Initial, Items: items, Partitions: parts})
	case pendingReset:
		s.resets.Add(1)
		lq.o.OnNext(mesh.Change{Kind: mesh.Reset, Items: items, Partitions: parts})
	default:
		s.deliver(lq.o, since, diff(lq.last, items, parts))
	}
	lq.last = make(map[string]mesh.Node, len(items))
	for _, n := range items {
		lq.last[n.Path] = n
	}
	return nil
}

// end ends lq because its subscription is over (the subscriber left, or
// Close): at once if it is idle, else by its runner.
func (s *Store) end(lq *liveQuery) {
	lq.mu.Lock()
	if lq.ended || lq.running {
		lq.ended = true
		lq.mu.Unlock()
		return
	}
	lq.ended, lq.running = true, true
	lq.mu.Unlock()
	s.finish(lq)
}

// finish unregisters an ended query and tells its subscriber, if the store
// closed (see endLive). The caller holds lq's running.
func (s *Store) finish(lq *liveQuery) {
	defer s.wg.Done() // the query's
	s.unregister(lq)
	lq.stopEnd()
	s.endLive(lq.o, lq.op(), lq.last != nil)
}

// deliver sends frames, caused by notices the earliest of which arrived
// at since (noNotice: none), and times the delivery once, before the
// first frame goes (Stats.NoticeToFrame).
func (s *Store) deliver(o rx.Observer[mesh.Change], since int64, frames []mesh.Change) {
	if since != noNotice && len(frames) > 0 {
		s.noticeToFrame.observe(s.sinceStamp(since))
	}
	for _, c := range frames {
		o.OnNext(c)
	}
}

// endLive ends a live query whose context is done: on Close it completes
// (or fails, when it never sent its Initial); an unsubscribed one gets
// nothing more.
func (s *Store) endLive(o rx.Observer[mesh.Change], op string, sentInitial bool) {
	if s.ctx.Err() == nil {
		return // the subscriber left
	}
	if sentInitial {
		o.OnCompleted()
		return
	}
	o.OnError(unavailable(op, ErrClosed))
}

func (s *Store) unregister(lq *liveQuery) {
	s.mu.Lock()
	s.live.Remove(lq.entry)
	s.mu.Unlock()
}

// diff returns the frames that turn the result before into the result
// now: Added for nodes that entered, Updated for nodes that changed, Removed
// for nodes that left.
func diff(before map[string]mesh.Node, now []mesh.Node, parts []string) []mesh.Change {
	var added, updated, removed []mesh.Node
	seen := make(map[string]bool, len(now))
	for _, n := range now {
		seen[n.Path] = true
		old, had := before[n.Path]
		switch {
		case !had:
			added = append(added, n)
		case !sameNode(old, n):
			updated = append(updated, n)
		}
	}
	for p, n := range before {
		if !seen[p] {
			removed = append(removed, n)
		}
	}
	return changeFrames(added, updated, removed, parts)
}

// changeFrames returns the Added, Updated and Removed frames, in that order,
// leaving out empty ones. Removed nodes are put in path order.
func changeFrames(added, updated, removed []mesh.Node, parts []string) []mesh.Change {
	slices.SortFunc(removed, func(a, b mesh.Node) int { return strings.Compare(a.Path, b.Path) })
	var out []mesh.Change
	for _, c := range []struct {
		kind  mesh.ChangeKind
		items []mesh.Node
	}{{mesh.Added, added}, {mesh.Updated, updated}, {mesh.Removed, removed}} {
		if len(c.items) > 0 {
			out = append(out, mesh.Change{Kind: c.kind, Items: c.items, Partitions: parts})
		}
	}
	return out
}

// recheck patches the live result last with the written paths: with the
// row a notice carried, or else by reading the path again (read reports
// whether it did). A path whose node now matches enters (Added) or changes
// in it (Updated), one whose node is gone or no longer matches leaves it
// (Removed).
func (s *Store) recheck(ctx context.Context, lq *liveQuery, paths []dirtyPath, last map[string]mesh.Node) (_ []mesh.Change, read bool, _ error) {
	var toRead []string
	for _, d := range paths {
		if !d.carried {
			toRead = append(toRead, d.path)
		}
	}
	var got map[string]mesh.Node
	if len(toRead) > 0 {
		var err error
		if got, err = s.pointRead(ctx, toRead); err != nil {
			return nil, true, err
		}
	}
	s.noticeRows.Add(int64(len(paths) - len(toRead)))
	var added, updated, removed []mesh.Node
	for _, d := range paths {
		p := d.path
		n, ok := got[p]
		if d.carried {
			n, ok = d.node, !d.gone
		}
		in := ok && lq.q.Matches(n)
		old, had := last[p]
		switch {
		case in && !had:
			added = append(added, n)
			last[p] = n
		case in && !sameNode(old, n):
			updated = append(updated, n)
			last[p] = n
		case !in && had:
			removed = append(removed, old)
			delete(last, p)
		}
	}
	byQuery := func(a, b mesh.Node) int {
		switch {
		case lq.q.Less(a, b):
			return -1
		case lq.q.Less(b, a):
			return 1
		}
		return 0
	}
	slices.SortStableFunc(added, byQuery)
	slices.SortStableFunc(updated, byQuery)
	return changeFrames(added, updated, removed, s.covered(lq.plan)), len(toRead) > 0, nil
}

func sameNode(a, b mesh.Node) bool {
	return a.Version == b.Version && a.LastModified.Equal(b.LastModified) && a.Name == b.Name &&
		a.NodeType == b.NodeType && a.State == b.State && a.MainNode == b.MainNode &&
		a.Namespace == b.Namespace && a.ID == b.ID && bytes.Equal(a.Content, b.Content)
}

// dispatch settles one change notice against the live queries: those it
// can concern owe a re-read of the path, the others are skipped without
// reading. The index of live queries hands it only those filed under the
// notice's schema, node type and path; Skipped counts every pair settled
// without reading, those the index never visited included (total minus
// requeried), so it keeps its meaning whatever the index spares.
//
// row is what the notice carried (nil: nothing); a query whose fence has
// arrived patches its result with it instead of reading.
func (s *Store) dispatch(schema string, partition bool, path, nodeType string, typed bool, row *written, at int64) {
	// Before any re-read it causes: the table now holds this type.
	if typed {
		s.schemas.addType(mesh.TableFor(path), nodeType)
	} else {
		s.schemas.markTypesStale()
	}
	typ := strings.ToLower(nodeType)
	w := liveindex.Write{Schema: schema, Partition: partition, Typed: typed, TypeA: typ, TypeB: typ, Path: strings.ToLower(path)}
	requeried := 0
	seen := s.fences.seen.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	total := s.live.Len()
	s.live.Visit(w, func(lq *liveQuery) {
		if lq.concerns(schema, partition, path, nodeType, typed) {
			requeried++
			if lq.owe(pendingDiff, path, row, seen, at) {
				s.startLocked(lq)
			}
		}
	})
	s.requeries.Add(int64(requeried))
	s.skipped.Add(int64(total - requeried))
}

// resetAll makes every live query re-read its whole result and send it as
// a Reset: after a gap in the feed nothing else is trustworthy. It logs
// why, with the error that caused it.
func (s *Store) resetAll(why string, cause error, reconnects int64) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	n := s.live.Len()
	s.live.All(func(lq *liveQuery) {
		if lq.owe(pendingReset, "", nil, 0, noNotice) {
			s.startLocked(lq)
		}
	})
	s.mu.Unlock()
	s.log.Warn("pgstore: resetting every live query: "+why, "cause", cause, "reconnects", reconnects, "queries", n)
}
