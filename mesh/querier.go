package mesh

import (
	"fmt"
	"slices"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/rx"
)

// Backend is the part of a store's Query that only the store can write:
// which partitions it holds, and the live read of a routed query over them.
// A Querier writes the rest once for every store: parse, the router, the
// unroutable answer, the providers and the fan-in.
type Backend interface {
	// Name names the store's own provider in a fan-in (as in
	// Change.SilentProviders).
	Name() string
	// Partitions returns the partition schemas the store holds now (global
	// satellite schemas are not partitions), for routing q. A store that
	// cannot serve q any more (closed) returns the error the query ends
	// with, a *UnavailableError.
	Partitions(q *Query) ([]string, error)
	// Watch returns the live result of q read over reach: exactly one
	// Initial frame first, then Added, Updated, Removed or Reset frames as
	// writes land.
	Watch(q *Query, reach Reach) rx.Observable[Change]
}

// Reach is where a routed query reads.
type Reach struct {
	Route Route
	// Schemas are the schemas to read, sorted and never nil, unless
	// AllPartitions.
	Schemas []string
	// AllPartitions says the query reads every partition schema as the store
	// knows them at each read, those created later included: an unanchored
	// fan-out that was not narrowed.
	AllPartitions bool
}

// Reach returns where a query routed to r reads. Anchored, or narrowed to
// declared instance locations (those that exist now: a declared partition
// created later joins at the next subscription), its schemas are fixed;
// otherwise it reads every partition.
func (r Route) Reach() Reach {
	if !r.Anchored && !r.Narrowed {
		return Reach{Route: r, AllPartitions: true}
	}
	schemas := r.Schemas
	if schemas == nil {
		schemas = []string{}
	}
	return Reach{Route: r, Schemas: schemas}
}

// Querier serves Query for a store on its Backend. Make one per store; it
// is immutable after the store starts and safe for concurrent use.
type Querier struct {
	Backend Backend
	// Router routes the parsed queries; it must be set.
	Router *Router
	// Providers are fanned in beside the backend on every routed query.
	Providers []Provider
	// Clock and InitialBudget bound each provider's Initial in the fan-in;
	// with Providers (or without Merged), Clock must be set and
	// InitialBudget positive, or every query fails with an *ArgumentError
	// or FanIn's *OptionsError.
	Clock         clock.Clock
	InitialBudget time.Duration
	// Merged says the backend's frames already have the shape FanIn gives a
	// merged result: deduplicated, in the query's order and limit, its
	// Initial bounded by InitialBudget, and its live frames relative to its
	// own result. With no Providers the Querier then passes them on without
	// a fan-in, which saves a map of the result, a sort and a goroutine
	// hand-off on every read.
	Merged bool
	// Until, when set, ends every routed query's stream when it emits (a
	// store's Close): the Providers may otherwise stay live forever.
	Until rx.Observable[struct{}]
}

// Query parses q, routes it over the backend's partitions and returns its
// live result, merged with the Providers by FanIn: an Initial with the full
// result, then frames as writes land. A query with select: has every
// frame's nodes projected (Project) once merged. A query that does not parse fails with
// *ParseError, one the router refuses with *UnanchoredQueryError, one the
// backend can no longer serve with the backend's error; an unroutable one
// answers an empty Initial and completes without touching the backend.
// Subscribing a nil observer panics, naming the query, before the backend
// is asked for anything. A nil Querier, or one whose Backend, Router
// (nil, or not made by NewRouter), a Provider, or Clock where a fan-in
// needs it, is nil, fails every query with an *ArgumentError naming it.
func (qr *Querier) Query(q string) rx.Observable[Change] {
	if err := qr.check(); err != nil {
		return rx.Throw[Change](err)
	}
	parsed, err := Parse(q)
	if err != nil {
		return rx.Throw[Change](err)
	}
	return observerRequired{query: q, Observable: rx.Defer(func() rx.Observable[Change] {
		known, err := qr.Backend.Partitions(parsed)
		if err != nil {
			return rx.Throw[Change](err)
		}
		route, err := qr.Router.Route(parsed, known)
		if err != nil {
			return rx.Throw[Change](err)
		}
		if route.Kind == Unroutable {
			return rx.Return(Change{Kind: Initial, Partitions: []string{}})
		}
		own := &backendProvider{b: qr.Backend, reach: route.Reach()}
		var merged rx.Observable[Change]
		if qr.Merged && len(qr.Providers) == 0 {
			merged = rx.Map(own.Query(parsed), asMerged)
		} else {
			providers := make([]Provider, 0, 1+len(qr.Providers))
			providers = append(providers, own)
			providers = append(providers, qr.Providers...)
			merged = FanIn(parsed, providers, qr.Clock, qr.InitialBudget)
		}
		if len(parsed.Select) > 0 {
			// After the fan-in, which keys, sorts and limits whole nodes.
			merged = rx.Map(merged, projectFrame(parsed.Select))
		}
		if qr.Until != nil {
			merged = rx.TakeUntil(merged, qr.Until)
		}
		return merged
	})}
}

// check returns the *ArgumentError for a Querier that cannot serve a query.
func (qr *Querier) check() error {
	const fn = "mesh.(*Querier).Query"
	switch {
	case qr == nil:
		return nilArg(fn, "receiver")
	case qr.Backend == nil:
		return nilArg(fn, "Querier.Backend")
	case !qr.Router.made():
		return &ArgumentError{Func: fn, Arg: "Querier.Router", Reason: "must be made by mesh.NewRouter"}
	}
	for i, p := range qr.Providers {
		if p == nil {
			return nilArg(fn, fmt.Sprintf("Querier.Providers[%d]", i))
		}
	}
	if qr.Clock == nil && !(qr.Merged && len(qr.Providers) == 0) {
		return nilArg(fn, "Querier.Clock")
	}
	return nil
}

// backendProvider is the backend's part of one query's fan-in.
type backendProvider struct {
	b     Backend
	reach Reach
}

func (p *backendProvider) Name() string { return p.b.Name() }

func (p *backendProvider) Query(q *Query) rx.Observable[Change] { return p.b.Watch(q, p.reach) }

// asMerged gives a frame of a backend alone the shape FanIn gives a merged
// one: no items and no partitions are nil, partitions sorted.
func asMerged(c Change) Change {
	if len(c.Items) == 0 {
		c.Items = nil
	}
	if len(c.Partitions) == 0 {
		c.Partitions = nil
	} else if !slices.IsSorted(c.Partitions) {
		c.Partitions = slices.Compact(slices.Sorted(slices.Values(c.Partitions)))
	}
	return c
}
