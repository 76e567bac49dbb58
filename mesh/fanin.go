package mesh

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/rx"
)

// FanIn merges the results of several providers of one query into one live
// result. Every provider must send exactly one Initial; the merged Initial
// is sent once all have (deduplicated by path, first provider wins, in the
// query's order, clipped to its limit). A provider that completes without an
// Initial counts as empty and is named in SilentProviders. If any provider
// is still silent when budget has passed on clk, the read ends with
// *ProviderStalledError naming it. Once every provider has been heard, no
// timer stays armed. After the Initial, live frames pass through, keeping
// at each path the first provider's node as the Initial does (a frame for a
// path an earlier provider holds changes nothing; an Added for a path a
// later one holds is an Updated; a Removed for a path a later one holds is
// an Updated with its node). With a limit, the frames are what changed in
// the merged first N. A provider's Reset re-sends the merged result as a
// Reset. Any provider error ends the read. With no providers the merged
// Initial is empty, sent at once, and the read completes. A budget that is
// not positive is refused with an *OptionsError; a nil q, clk or provider
// in the list with an *ArgumentError. Both arrive at subscription.
func FanIn(q *Query, providers []Provider, clk clock.Clock, budget time.Duration) rx.Observable[Change] {
	if q == nil {
		return rx.Throw[Change](nilArg("mesh.FanIn", "q"))
	}
	for i, p := range providers {
		if p == nil {
			return rx.Throw[Change](nilArg("mesh.FanIn", fmt.Sprintf("providers[%d]", i)))
		}
	}
	if clk == nil {
		return rx.Throw[Change](nilArg("mesh.FanIn", "clk"))
	}
	if budget <= 0 {
		return rx.Throw[Change](&OptionsError{Setting: "mesh: FanIn budget",
			Problem: fmt.Sprintf("must be positive, got %v; a query's is Budgets.QueryInitial (mesh.DefaultBudgets)", budget)})
	}
	if len(providers) == 0 {
		return rx.Return(Change{Kind: Initial})
	}
	return rx.Defer(func() rx.Observable[Change] {
		st := newFanIn(q, providers, budget)
		// heard replays to late subscribers: providers that answer while being
		// subscribed must still disarm the stall timer.
		heard := rx.NewAsyncSubject[struct{}]()
		st.heard = heard
		stall := rx.TakeUntil[time.Time, struct{}](rx.Timer(budget, clk), heard)
		sources := make([]rx.Observable[fanInEvent], 0, len(providers)+1)
		sources = append(sources, rx.Map(stall, func(time.Time) fanInEvent { return fanInEvent{from: -1} }))
		for i, p := range providers {
			frames := rx.Map(p.Query(q), func(c Change) fanInEvent { return fanInEvent{from: i, change: c} })
			sources = append(sources, rx.Concat(frames, rx.Return(fanInEvent{from: i, completed: true})))
		}
		steps := rx.Map(rx.Merge(sources...), st.step)
		return rx.ConcatMap(steps, func(s fanInStep) rx.Observable[Change] {
			if s.err != nil {
				return rx.Throw[Change](s.err)
			}
			return rx.Of(s.out...)
		})
	})
}

type fanInEvent struct {
	from      int // provider index; -1 is the stall timer
	change    Change
	completed bool
}

type fanInStep struct {
	out []Change
	err error
}

// fanIn is the state of one subscription; step runs serialised by Merge.
type fanIn struct {
	q         *Query
	names     []string
	budget    time.Duration
	heard     *rx.AsyncSubject[struct{}]
	sets      []map[string]Node // each provider's current result
	initial   []bool
	silent    []bool
	parts     [][]string
	remaining int // providers not yet heard
	sent      bool
	// top is a limited query's merged result as last sent: what enters or
	// leaves the first N only the merged result says.
	top map[string]Node
}

func newFanIn(q *Query, providers []Provider, budget time.Duration) *fanIn {
	f := &fanIn{q: q, budget: budget, remaining: len(providers)}
	for _, p := range providers {
		f.names = append(f.names, p.Name())
		f.sets = append(f.sets, map[string]Node{})
	}
	f.initial = make([]bool, len(providers))
	f.silent = make([]bool, len(providers))
	f.parts = make([][]string, len(providers))
	return f
}

func (f *fanIn) step(e fanInEvent) fanInStep {
	if e.from < 0 { // the stall timer fired
		if f.sent {
			return fanInStep{}
		}
		var missing []string
		for i, seen := range f.initial {
			if !seen && !f.silent[i] {
				missing = append(missing, f.names[i])
			}
		}
		return fanInStep{err: &ProviderStalledError{Providers: missing, Budget: f.budget, Query: f.q.String()}}
	}
	if e.completed {
		if !f.initial[e.from] && !f.silent[e.from] {
			f.silent[e.from] = true
			return f.heardOne()
		}
		return fanInStep{}
	}
	c := e.change
	switch c.Kind {
	case Initial, Reset:
		set := make(map[string]Node, len(c.Items))
		for _, n := range c.Items {
			set[pathOf(n)] = n
		}
		f.sets[e.from] = set
		f.parts[e.from] = c.Partitions
		f.silent[e.from] = false
		if c.SilentProviders != nil {
			f.silent[e.from] = true // a provider reporting its own floor
		}
		if !f.initial[e.from] {
			f.initial[e.from] = true
			return f.heardOne()
		}
		if !f.sent {
			return fanInStep{}
		}
		return fanInStep{out: []Change{f.merged(Reset)}}
	}
	if !f.initial[e.from] {
		return fanInStep{} // live frames before a provider's own Initial carry nothing
	}
	if f.q.Limit > 0 {
		return fanInStep{out: f.liveLimited(e.from, c)}
	}
	return fanInStep{out: f.live(e.from, c)}
}

// heardOne counts a provider heard from; when it was the last, the merged
// Initial goes out and the stall timer is disarmed.
func (f *fanIn) heardOne() fanInStep {
	f.remaining--
	if f.remaining > 0 {
		return fanInStep{}
	}
	f.sent = true
	f.heard.OnNext(struct{}{})
	f.heard.OnCompleted()
	return fanInStep{out: []Change{f.merged(Initial)}}
}

func (f *fanIn) merged(kind ChangeKind) Change {
	seen := map[string]bool{}
	var items []Node
	var parts, silent []string
	for i, set := range f.sets {
		for p, n := range set {
			if !seen[p] {
				seen[p] = true
				items = append(items, n)
			}
		}
		parts = append(parts, f.parts[i]...)
		if f.silent[i] {
			silent = append(silent, f.names[i])
		}
	}
	f.q.SortNodes(items)
	if f.q.Limit > 0 {
		if len(items) > f.q.Limit {
			items = items[:f.q.Limit]
		}
		f.top = make(map[string]Node, len(items))
		for _, n := range items {
			f.top[pathOf(n)] = n
		}
	}
	if parts != nil {
		slices.Sort(parts)
		parts = slices.Compact(parts)
	}
	return Change{Kind: kind, Items: items, Partitions: parts, SilentProviders: silent}
}

// live applies one provider's live frame and returns what the merged result
// gains from it. The merged result holds at each path the node of the first
// provider that holds it, as the Initial does: a frame for a path an
// earlier provider holds changes nothing, and the removal of the node shown
// shows the next provider's, if one holds the path.
func (f *fanIn) live(from int, c Change) []Change {
	var added, updated, removed []Node
	for _, n := range c.Items {
		p := pathOf(n)
		shadowed := f.heldBefore(p, from)
		switch c.Kind {
		case Added, Updated:
			_, had := f.sets[from][p]
			f.sets[from][p] = n
			if !f.sent || shadowed {
				continue
			}
			if had || f.heldBy(p, from) {
				updated = append(updated, n)
			} else {
				added = append(added, n)
			}
		case Removed:
			_, had := f.sets[from][p]
			delete(f.sets[from], p)
			if !f.sent || shadowed || !had {
				continue // the node shown at p is not the one removed
			}
			if next, ok := f.heldAfter(p, from); ok {
				updated = append(updated, next)
			} else {
				removed = append(removed, n)
			}
		}
	}
	var out []Change
	for _, x := range []struct {
		kind  ChangeKind
		items []Node
	}{{Added, added}, {Updated, updated}, {Removed, removed}} {
		if len(x.items) > 0 {
			out = append(out, Change{Kind: x.kind, Items: x.items, Partitions: c.Partitions})
		}
	}
	return out
}

// liveLimited applies one provider's live frame to a limited query and
// returns what changed in the merged first N: a node a provider adds may
// stay beyond them, or push the last one out; one it removes may let the
// next one in.
func (f *fanIn) liveLimited(from int, c Change) []Change {
	touched := make(map[string]bool, len(c.Items))
	for _, n := range c.Items {
		p := pathOf(n)
		switch c.Kind {
		case Added, Updated:
			f.sets[from][p] = n
			touched[p] = true
		case Removed:
			if _, had := f.sets[from][p]; had {
				delete(f.sets[from], p)
				touched[p] = true
			}
		}
	}
	if !f.sent {
		return nil
	}
	before := f.top
	now := f.merged(Initial).Items // sets f.top
	var added, updated, removed []Node
	for _, n := range now {
		p := pathOf(n)
		if _, had := before[p]; !had {
			added = append(added, n)
		} else if touched[p] && !f.heldBefore(p, from) {
			// The node shown at p is the first holder's: it changed only
			// when no provider before from holds p (from's own node came,
			// went or changed, uncovering or covering a later one's).
			updated = append(updated, n)
		}
	}
	for p, n := range before {
		if _, kept := f.top[p]; !kept {
			removed = append(removed, n)
		}
	}
	slices.SortFunc(removed, func(a, b Node) int { return strings.Compare(pathOf(a), pathOf(b)) })
	var out []Change
	for _, x := range []Change{{Kind: Added, Items: added}, {Kind: Updated, Items: updated}, {Kind: Removed, Items: removed}} {
		if len(x.Items) > 0 {
			x.Partitions = c.Partitions
			out = append(out, x)
		}
	}
	return out
}

// heldBefore reports whether a provider before from holds path.
func (f *fanIn) heldBefore(path string, from int) bool {
	for _, set := range f.sets[:from] {
		if _, ok := set[path]; ok {
			return true
		}
	}
	return false
}

// heldAfter returns the node at path of the first provider after from
// that holds it.
func (f *fanIn) heldAfter(path string, from int) (Node, bool) {
	for _, set := range f.sets[from+1:] {
		if n, ok := set[path]; ok {
			return n, true
		}
	}
	return Node{}, false
}

func (f *fanIn) heldBy(path string, except int) bool {
	for i, set := range f.sets {
		if i == except {
			continue
		}
		if _, ok := set[path]; ok {
			return true
		}
	}
	return false
}
