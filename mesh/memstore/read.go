package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// Get reads the node at exactly path: the node then completion when it is
// present, completion alone when it is absent (including under an unroutable
// path, where nothing can be stored). An invalid path fails with
// *mesh.PathError; a closed store with *mesh.UnavailableError.
func (s *Store) Get(path string) rx.Observable[mesh.Node] {
	if err := mesh.ValidatePath(path); err != nil {
		return rx.Throw[mesh.Node](err)
	}
	return rx.Defer(func() rx.Observable[mesh.Node] {
		n, ok, err := s.get(path)
		switch {
		case err != nil:
			return rx.Throw[mesh.Node](err)
		case !ok:
			return rx.Empty[mesh.Node]()
		}
		return rx.Return(n)
	})
}

func (s *Store) get(path string) (mesh.Node, bool, error) {
	schema, _, err := s.schemaOf(path)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return mesh.Node{}, false, unavailable("read " + path)
	}
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
// its live result, merged with Options.Providers by mesh.FanIn: an Initial
// with the full result, then Added, Updated and Removed frames as writes
// land. A query that does not parse fails with *mesh.ParseError; one the
// router refuses with *mesh.UnanchoredQueryError; an unroutable one answers
// an empty Initial and completes, since nothing can ever be stored there.
// Close completes every live query.
func (s *Store) Query(q string) rx.Observable[mesh.Change] {
	parsed, err := mesh.Parse(q)
	if err != nil {
		return rx.Throw[mesh.Change](err)
	}
	return rx.Defer(func() rx.Observable[mesh.Change] {
		plan, err := s.plan(parsed)
		if err != nil {
			return rx.Throw[mesh.Change](err)
		}
		if plan.unroutable {
			return rx.Return(mesh.Change{Kind: mesh.Initial, Partitions: []string{}})
		}
		providers := make([]mesh.Provider, 0, 1+len(s.providers))
		providers = append(providers, &storeProvider{s: s, plan: plan})
		providers = append(providers, s.providers...)
		return rx.TakeUntil(mesh.FanIn(parsed, providers, s.clk, s.budgets.QueryInitial), s.closing)
	})
}

// plan is how the store serves one subscription of a query.
type plan struct {
	unroutable bool
	schemas    []string // fixed schemas to read
	anySchema  bool     // read every partition, now and as they are created
}

func (s *Store) plan(q *mesh.Query) (plan, error) {
	s.mu.RLock()
	closed := s.closed
	known := s.partitionSchemas()
	s.mu.RUnlock()
	if closed {
		return plan{}, unavailable("query " + q.String())
	}
	route, err := s.router.Route(q, known)
	if err != nil {
		return plan{}, err
	}
	switch {
	case route.Kind == mesh.Unroutable:
		return plan{unroutable: true}, nil
	case route.Anchored:
		return plan{schemas: route.Schemas}, nil
	}
	if route.Narrowed {
		// Narrowed to declared instance locations: those that exist now. A
		// declared partition created later joins at the next subscription.
		return plan{schemas: route.Schemas}, nil
	}
	return plan{anySchema: true}, nil
}

// storeProvider is the store's part of one query's fan-in.
type storeProvider struct {
	s    *Store
	plan plan
}

func (p *storeProvider) Name() string { return providerName }

func (p *storeProvider) Query(q *mesh.Query) rx.Observable[mesh.Change] {
	return rx.Defer(func() rx.Observable[mesh.Change] {
		lq := newLiveQuery(q, p.plan)
		lq.box.bound = p.s.queueFrames
		live := rx.Create(func(_ context.Context, o rx.Observer[mesh.Change]) {
			lq.o = o
			p.s.register(lq)
		})
		return rx.Finally(live, func() { p.s.unregister(lq) })
	})
}

func newLiveQuery(q *mesh.Query, pl plan) *liveQuery {
	lq := &liveQuery{q: q, anySchema: pl.anySchema, anchor: newAnchorFilter(q)}
	if types, ok := q.NodeTypes(); ok {
		lq.types = make([]string, 0, len(types))
		for _, t := range types {
			lq.types = append(lq.types, strings.ToLower(t))
		}
		slices.Sort(lq.types)
		lq.types = slices.Compact(lq.types)
	}
	if !pl.anySchema {
		lq.schemas = make(map[string]bool, len(pl.schemas))
		for _, sc := range pl.schemas {
			lq.schemas[sc] = true
		}
		lq.parts = slices.Clone(pl.schemas)
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
		lq.parts = schemas
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
	return items // FanIn orders the merged result
}
