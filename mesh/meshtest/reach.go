package meshtest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// The reach check's sizes: ReachPartitions partitions, each read by every
// query of reachShapes twice (as written, and sorted another way), plus the
// mesh-wide queries: 2,004 live queries at once. ReachWrites writes run one
// at a time.
const (
	ReachPartitions = 50
	ReachWrites     = 120
	reachBatch      = 100 // queries subscribed at once
)

// reachShapes are the queries of one partition p (q is the next one):
// children, descendants and subtree anchors, exact paths, path lists (one
// across two partitions), a glob, a hierarchy, constrained, negated and
// unconstrained types in any case, and content comparisons.
func reachShapes(p, q string) []string {
	return []string{
		"namespace:" + p + "/a",
		"namespace:" + p + "/a nodeType:Card",
		"namespace:" + p + "/a nodeType:Note|Task",
		"namespace:" + p + "/a/b nodeType:Task",
		"namespace:" + p + "/a/b",
		"namespace:" + p + "/c",
		"namespace:" + upper(p) + "/A nodeType:card",
		"path:" + p + " scope:descendants nodeType:Note",
		"path:" + p + "/a scope:subtree -nodeType:Card",
		"path:" + p + "/a scope:descendants content.n:>50",
		"namespace:" + p + "/a content.n:<30",
		"path:" + p + "/c scope:descendants nodeType:Task|Card",
		"path:" + p + "/a/x",
		"path:" + p + "/c/y nodeType:Card",
		"[" + p + "/a/x, " + p + "/c/x]",
		"[" + p + "/a/y, " + q + "/a/y]",
		"path:" + p + "/*/x",
		"path:" + p + "/a scope:hierarchy nodeType:Note",
		"path:" + p + "/a/b scope:subtree",
		"path:" + p + "/c scope:subtree nodeType:Note",
	}
}

func reachGlobal() []string {
	return []string{"nodeType:Task partitions:all", "partitions:all content.n:>95",
		"nodeType:Note partitions:all sort:name-desc", "nodeType:Nothing partitions:all"}
}

func reachPartition(i int) string { return fmt.Sprintf("r%02d", i) }

func reachPaths(partitions int) []string {
	var ps []string
	for i := range partitions {
		p := reachPartition(i)
		for _, rest := range []string{"a/x", "a/y", "a/b/x", "a/b/y", "c/x", "c/y"} {
			ps = append(ps, p+"/"+rest)
		}
	}
	return ps
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// reachQuery is one live query of the check, with its model: the result
// it must have, and every frame it must receive.
type reachQuery struct {
	text   string
	parsed *mesh.Query
	rows   map[string]mesh.Node // the model's result
	want   []string             // the frames it must receive, described
	// received frames, described; guarded by mu, changed signalled on each.
	mu      sync.Mutex
	got     []string
	initial []mesh.Node
	err     error
	changed chan struct{}
	sub     rx.Subscription
	checked int // frames compared with the model so far
}

func (r *reachQuery) onFrame(c mesh.Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.Kind == mesh.Initial {
		r.initial = c.Items
		r.got = append(r.got, "initial")
	} else {
		for _, n := range c.Items {
			r.got = append(r.got, frameOf(c.Kind, n))
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *reachQuery) onError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
	close(r.changed)
	r.changed = make(chan struct{})
}

// frameOf describes one item of a frame: Removed by path alone (stores
// report the node as it was), Added and Updated with the version.
func frameOf(kind mesh.ChangeKind, n mesh.Node) string {
	if kind == mesh.Removed {
		return "removed " + n.Path
	}
	return fmt.Sprintf("%s %s@%d", kind, n.Path, n.Version)
}

// awaitFrames waits until r has received as many frames as it must, or
// until deadline, and returns those it received that were not checked yet.
func (r *reachQuery) awaitFrames(deadline time.Time) []string {
	for {
		r.mu.Lock()
		n, changed, err := len(r.got), r.changed, r.err
		if n >= len(r.want) || err != nil || !time.Now().Before(deadline) {
			got := slices.Clone(r.got[min(r.checked, n):])
			r.mu.Unlock()
			return got
		}
		r.mu.Unlock()
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// check fails the test unless r received exactly the frames the model
// says it must have received by now.
func (r *reachQuery) check(t testing.TB, bound time.Duration, deadline time.Time, after string) {
	t.Helper()
	got := r.awaitFrames(deadline)
	want := r.want[r.checked:]
	if !slices.Equal(want, got) {
		r.mu.Lock()
		err := r.err
		r.mu.Unlock()
		require.Equal(t, want, got, "%s: query %s must receive exactly the frames of the writes that change its result (waited at most %s; error %v)",
			after, r.text, bound, err)
	}
	r.checked = len(r.want)
}

// applyReach updates the model with a write (old and cur nil when absent),
// records the frame each query must receive, and returns the queries that
// must receive one.
func applyReach(queries []*reachQuery, old, cur *mesh.Node) []*reachQuery {
	var reached []*reachQuery
	for _, r := range queries {
		wasIn := old != nil && r.parsed.Matches(*old)
		nowIn := cur != nil && r.parsed.Matches(*cur)
		switch {
		case wasIn && nowIn:
			r.want = append(r.want, frameOf(mesh.Updated, *cur))
		case nowIn:
			r.want = append(r.want, frameOf(mesh.Added, *cur))
		case wasIn:
			r.want = append(r.want, frameOf(mesh.Removed, *old))
		}
		if nowIn {
			r.rows[cur.Path] = *cur
		} else if wasIn {
			delete(r.rows, old.Path)
		}
		if wasIn || nowIn {
			reached = append(reached, r)
		}
	}
	return reached
}

// reach: with thousands of live queries of many shapes over many
// partitions, each write reaches exactly the queries whose results it
// changes, as the frame that says how: no query it changes misses it, no
// query it leaves alone receives anything. Writes run one at a time and
// each waits for the frames it must cause, so a frame cannot stand for two
// writes and every query's frames must be exactly the model's. A stray
// frame is caught at the query's next check: frames keep write order, so
// it arrives before the frames of later writes. Fences at the end (writes
// that change every query's result) give each query frames after the
// others' writes, and a last pass checks every query.
func (s *suite) reach(t testing.TB, svc mesh.Store) {
	rng := rand.New(rand.NewPCG(7, 25))
	partitions := s.partitions
	if partitions == 0 {
		partitions = ReachPartitions
	}
	paths := reachPaths(partitions)
	stored := map[string]mesh.Node{}
	write := func(p string) (old, cur *mesh.Node) {
		if prev, ok := stored[p]; ok {
			old = &prev
		}
		if old != nil && rng.IntN(4) == 0 {
			del(t, svc, p)
			delete(stored, p)
			return old, nil
		}
		n := mesh.Node{Path: p, NodeType: cardTypes()[rng.IntN(3)], Name: p,
			Content: fmt.Appendf(nil, `{"n":%d,"w":%d}`, rng.IntN(100), rng.Uint32())}
		n = put(t, svc, n)
		stored[p] = n
		return old, &n
	}
	for _, p := range paths {
		if rng.IntN(2) == 0 {
			write(p)
		}
	}

	var queries []*reachQuery
	t.Cleanup(func() {
		for _, r := range queries {
			r.sub.Unsubscribe()
		}
	})
	var texts []string
	for i := range partitions {
		for _, q := range reachShapes(reachPartition(i), reachPartition((i+1)%partitions)) {
			texts = append(texts, q, q+" sort:name-desc")
		}
	}
	texts = append(texts, reachGlobal()...)
	// Subscribed reachBatch at a time, each batch waiting for its Initials:
	// a store reading thousands of Initials at once (pgstore, on a small
	// pool) would otherwise be measured on its queue, not on reach.
	for batch := range slices.Chunk(texts, reachBatch) {
		var subscribed []*reachQuery
		for _, q := range batch {
			parsed, err := mesh.Parse(q)
			require.NoError(t, err, "query %s", q)
			r := &reachQuery{text: q, parsed: parsed, rows: map[string]mesh.Node{}, want: []string{"initial"},
				changed: make(chan struct{})}
			for _, n := range stored {
				if parsed.Matches(n) {
					r.rows[n.Path] = n
				}
			}
			r.sub = svc.Query(q).Subscribe(rx.NewObserver(r.onFrame, r.onError, nil))
			queries = append(queries, r)
			subscribed = append(subscribed, r)
		}
		deadline := time.Now().Add(s.bound)
		for _, r := range subscribed {
			r.check(t, s.bound, deadline, "subscribing")
			r.mu.Lock()
			initial := r.initial
			r.mu.Unlock()
			require.ElementsMatch(t, slices.Sorted(maps.Keys(r.rows)), pathsOf(initial),
				"query %s: the Initial holds what the model holds", r.text)
		}
	}

	// One write at a time; each waits for the frames it must cause.
	for i := range ReachWrites {
		old, cur := write(paths[rng.IntN(len(paths))])
		reached := applyReach(queries, old, cur)
		deadline := time.Now().Add(s.bound)
		after := fmt.Sprintf("write %d (%s)", i, describeWrite(old, cur))
		for _, r := range reached {
			r.check(t, s.bound, deadline, after)
		}
	}

	// Fences: a write each query's result must change, so a stray frame of
	// an earlier write shows before it.
	fences := reachFences(queries, paths)
	for _, pass := range [][]string{fences} {
		for _, p := range pass {
			prev := stored[p]
			n := prev
			n.Content = fmt.Appendf(nil, `{"n":77,"w":%d}`, rng.Uint32())
			n = put(t, svc, n)
			stored[p] = n
			reached := applyReach(queries, &prev, &n)
			deadline := time.Now().Add(s.bound)
			for _, r := range reached {
				r.check(t, s.bound, deadline, "fence "+p)
			}
		}
	}
	// Every query once more: a stray frame of any write has arrived before
	// the frames of the fences after it.
	for _, r := range queries {
		r.check(t, s.bound, time.Now(), "all the writes")
	}
	frames, reached := 0, 0
	for _, r := range queries {
		frames += len(r.want) - 1
		if len(r.want) > 1 {
			reached++
		}
	}
	// Not vacuous: the writes changed many results, and most queries'.
	require.Greater(t, frames, ReachWrites, "frames the writes must cause")
	require.Greater(t, reached, len(queries)/2, "queries the writes must reach")
	t.Logf("%d live queries, %d writes and %d fences: %d frames to %d queries, each as the model says",
		len(queries), ReachWrites, len(fences), frames, reached)
}

// reachFences picks nodes (writing them first where needed, through the
// model) so that every query matches at least one: an update of each
// changes the results of the queries holding it.
func reachFences(queries []*reachQuery, paths []string) []string {
	var fences []string
	for _, r := range queries {
		if len(r.rows) == 0 {
			continue
		}
		covered := false
		for _, f := range fences {
			if _, ok := r.rows[f]; ok {
				covered = true
				break
			}
		}
		if !covered {
			fences = append(fences, slices.Sorted(maps.Keys(r.rows))[0])
		}
	}
	return fences
}

func describeWrite(old, cur *mesh.Node) string {
	switch {
	case cur == nil:
		return "delete " + old.Path
	case old == nil:
		return "insert " + cur.Path + " " + cur.NodeType
	}
	return fmt.Sprintf("update %s %s→%s %s", cur.Path, old.NodeType, cur.NodeType, cur.Content)
}
