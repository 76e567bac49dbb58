package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// Get reads the node at exactly path: the node then completion when it is
// present, completion alone when it is absent (including under an unroutable
// path, where nothing can be stored). An invalid path fails with
// *mesh.PathError; a closed store, or a read that could not take the
// store's lock within Budgets.QueryInitial (queued behind a writer and the
// reads ahead of it), with *mesh.UnavailableError. That wait also ends
// when the subscription does.
func (s *Store) Get(path string) rx.Observable[mesh.Node] {
	if err := s.usable("Get", nil, false); err != nil {
		return rx.Throw[mesh.Node](err)
	}
	if err := mesh.ValidatePath(path); err != nil {
		return rx.Throw[mesh.Node](err)
	}
	return rx.Defer(func() rx.Observable[mesh.Node] {
		if s.mu.TryRLock() { // the common case: no wait, no context to watch
			return nodeOrNothing(s.getLocked(path))
		}
		return rx.Create(func(ctx context.Context, o rx.Observer[mesh.Node]) {
			n, ok, err := s.get(ctx, path)
			switch {
			case err != nil:
				o.OnError(err)
			case ok:
				o.OnNext(n)
				o.OnCompleted()
			default:
				o.OnCompleted()
			}
		})
	})
}

func nodeOrNothing(n mesh.Node, ok bool, err error) rx.Observable[mesh.Node] {
	switch {
	case err != nil:
		return rx.Throw[mesh.Node](err)
	case !ok:
		return rx.Empty[mesh.Node]()
	}
	return rx.Return(n)
}

// rlockWithin takes the store's lock for reading, waiting (when it must)
// at most Budgets.QueryInitial on the store's clock, or until ctx ends.
func (s *Store) rlockWithin(ctx context.Context) error {
	if s.mu.TryRLock() {
		return nil // the common case: no timer
	}
	wait, cancel := s.clk.WithTimeout(ctx, s.budgets.QueryInitial)
	defer cancel()
	return s.mu.RLockContext(wait)
}

// get waits for the store's lock within its budget, or until ctx ends,
// and reads path.
func (s *Store) get(ctx context.Context, path string) (mesh.Node, bool, error) {
	if err := s.rlockWithin(ctx); err != nil {
		op := "read " + path + ": waiting for the store's lock"
		if ctx.Err() != nil {
			return mesh.Node{}, false, &mesh.UnavailableError{Op: op, Err: ctx.Err()}
		}
		// A read queued behind a writer waits for the reads ahead of it
		// too: past a read's budget it cannot say what is there.
		return mesh.Node{}, false, &mesh.UnavailableError{Op: op,
			Err: fmt.Errorf("no answer within %s (Budgets.QueryInitial): %w", s.budgets.QueryInitial, rx.ErrTimeout)}
	}
	return s.getLocked(path)
}

// getLocked reads path; the caller holds mu for reading, which it releases.
func (s *Store) getLocked(path string) (mesh.Node, bool, error) {
	defer s.mu.RUnlock()
	if s.closed {
		return mesh.Node{}, false, unavailable("read " + path)
	}
	schema, _, err := s.schemaOf(path)
	if err != nil {
		return mesh.Node{}, false, nil // unroutable: nothing can live there
	}
	p := s.parts[schema]
	if p == nil {
		return mesh.Node{}, false, nil
	}
	e, ok := p.lookup(path)
	if !ok {
		return mesh.Node{}, false, nil
	}
	return e.node, true, nil
}

// Query parses q, routes it over the partitions the store holds and returns
// its live result, merged with Options.Providers by mesh.FanIn (see
// mesh.Querier): an Initial with the full result, then Added, Updated and
// Removed frames as writes land. A query that does not parse fails with
// *mesh.ParseError; one the router refuses with *mesh.UnanchoredQueryError;
// an unroutable one answers an empty Initial and completes, since nothing
// can ever be stored there. Close completes every live query.
func (s *Store) Query(q string) rx.Observable[mesh.Change] {
	if err := s.usable("Query", nil, false); err != nil {
		return rx.Throw[mesh.Change](err)
	}
	return s.querier.Query(q)
}

// backend is the store's mesh.Backend: its partitions and live reads.
type backend struct{ s *Store }

func (b backend) Name() string { return providerName }

func (b backend) Partitions(q *mesh.Query) ([]string, error) {
	// Without the store's lock: a query queued behind a long read waits
	// once, for its Initial, within its budget (register).
	v := b.s.routing.Load()
	if v.closed {
		return nil, unavailable("query " + q.String())
	}
	return v.schemas, nil
}

func (b backend) Watch(q *mesh.Query, reach mesh.Reach) rx.Observable[mesh.Change] {
	s := b.s
	return rx.Defer(func() rx.Observable[mesh.Change] {
		lq := newLiveQuery(q, reach)
		lq.box.Bound = s.queueFrames
		live := rx.Create(func(ctx context.Context, o rx.Observer[mesh.Change]) {
			lq.o = o
			s.register(ctx, lq)
		})
		return rx.Finally(live, func() { s.unregister(lq) })
	})
}

func newLiveQuery(q *mesh.Query, reach mesh.Reach) *liveQuery {
	lq := &liveQuery{q: q, anySchema: reach.AllPartitions, anchor: newAnchorFilter(q)}
	if types, ok := q.NodeTypes(); ok {
		lq.types = make([]string, 0, len(types))
		for _, t := range types {
			lq.types = append(lq.types, strings.ToLower(t))
		}
		slices.Sort(lq.types)
		lq.types = slices.Compact(lq.types)
	}
	if !reach.AllPartitions {
		lq.schemas = make(map[string]bool, len(reach.Schemas))
		for _, sc := range reach.Schemas {
			lq.schemas[sc] = true
		}
		lq.parts = slices.Clone(reach.Schemas)
		if lq.parts == nil {
			lq.parts = []string{}
		}
	}
	return lq
}

// read returns the nodes lq's query selects now, and sets
// lq.parts for an any-schema query. The caller holds mu.
func (s *Store) read(lq *liveQuery) []mesh.Node {
	schemas := lq.parts
	if lq.anySchema {
		schemas = s.partitionSchemas()
		lq.parts = slices.Clone(schemas) // reported on frames: the subscriber's own
	}
	var items []mesh.Node
	scanned := int64(0)
	for _, schema := range schemas {
		p := s.parts[schema]
		if p == nil {
			continue
		}
		items = slices.Grow(items, p.sizeHint(lq.q))
		p.candidates(lq.q, func(e *entry) bool {
			scanned++
			if lq.q.Matches(e.node) {
				items = append(items, e.node)
			}
			return true
		})
	}
	s.scanned.Add(scanned)
	return items // ordered by answer, once the lock is released
}

// answer puts a full result read by read into lq's order and limit. It
// runs outside the store's lock: a sort of a large result must not hold
// up writers.
func (lq *liveQuery) answer(items []mesh.Node) []mesh.Node {
	lq.q.SortNodes(items)
	if lq.q.Limit > 0 && len(items) > lq.q.Limit {
		items = items[:lq.q.Limit]
	}
	return items
}
