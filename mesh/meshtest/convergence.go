package meshtest

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// convergenceQueries cover children, descendants, subtree, a path list over
// two partitions, constrained and unconstrained types, a negated type, a
// content comparison, a declared mesh-wide read, and limits (in path order
// and in a content order): a write beyond a limited result changes nothing,
// one into it pushes the last row out.
func convergenceQueries() []string {
	return []string{
		"namespace:acme/Board",
		"namespace:acme/Board nodeType:Card",
		"namespace:acme/Board nodeType:Note|Task",
		"path:acme/Board scope:descendants content.n:>50",
		"path:acme scope:subtree -nodeType:Card",
		"namespace:beta/Board",
		"[acme/Board/n01, acme/Board/n02, beta/Board/n01]",
		"nodeType:Card partitions:all",
		"namespace:acme/Board limit:5",
		"path:acme scope:subtree sort:content.n-desc limit:4",
	}
}

// convergence: many live queries, some subscribed while the writes run,
// patched frame by frame, end where a fresh read of the same query ends.
func (s *suite) convergence(t testing.TB, svc mesh.Store) {
	const writers, opsPerWriter = 6, 120
	paths := convergencePaths()
	for i, p := range paths[:len(paths)/2] {
		put(t, svc, withContent(node(p, cardTypes()[i%3]), fmt.Sprintf(`{"n":%d}`, i*7%100)))
	}

	var subs []*liveResult
	t.Cleanup(func() {
		for _, l := range subs {
			l.sub.Unsubscribe()
		}
	})
	for _, q := range convergenceQueries() {
		subs = append(subs, subscribeLive(svc, q), subscribeLive(svc, q))
	}

	// The writers are watched for progress, not timed: the check fails when
	// Convergence passes without any write returning (a hang, e.g. a writer
	// waiting for a reader), never because 720 writes took long on a
	// loaded machine. A deadline over the whole run (it was Convergence,
	// before that 10s) measured the machine, and tripped beside two
	// CPU-burning loops.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan error, writers)
	progress := make(chan struct{}, 1)
	late := make(chan []*liveResult, 1)
	for w := range writers {
		go func() {
			results <- write(ctx, svc, paths, w, opsPerWriter, func() {
				select {
				case progress <- struct{}{}:
				default:
				}
			})
		}()
	}
	go func() {
		// Subscriptions that race the writers: registration and Initial must
		// be one step with respect to every write.
		var ls []*liveResult
		for _, q := range convergenceQueries() {
			ls = append(ls, subscribeLive(svc, q))
		}
		late <- ls
	}()
	stall := time.NewTimer(Convergence)
	defer stall.Stop()
	var writeErrs []error
	for finished := 0; finished < writers; {
		select {
		case err := <-results:
			finished++
			if err != nil {
				writeErrs = append(writeErrs, err)
			}
		case <-progress:
		case <-stall.C:
			cancel()
			require.FailNow(t, "writers stopped making progress", "no write of %d writers (%d operations each) returned for %s", writers, opsPerWriter, Convergence)
		}
		stall.Reset(Convergence)
	}
	select {
	case ls := <-late:
		subs = append(subs, ls...)
	case <-time.After(Convergence):
		require.FailNow(t, "late subscriptions did not return", "waited %s", Convergence)
	}
	require.Empty(t, writeErrs, "every write succeeds")

	for _, l := range subs {
		want := fingerprintOf(initialOf(t, s.bound, svc, l.q).Items)
		got, err := firstErr(s.bound, rx.Filter[liveState](l.state, func(st liveState) bool { return st.initial && st.rows == want }))
		require.NoError(t, err, "query %s: waiting (at most %s) for the live result to equal a fresh Initial\n want %s\n have %s\n error %v",
			l.q, s.bound, want, l.state.Value().rows, l.rec.Err())
		assert.Equal(t, want, got.rows)
		assert.NoError(t, l.rec.GrammarErr(), "query %s broke the Rx grammar", l.q)
		assert.NoError(t, l.rec.Err(), "query %s failed", l.q)
		frames := l.rec.Values()
		require.NotEmpty(t, frames)
		assert.Equal(t, mesh.Initial, frames[0].Kind, "query %s: the first frame is the Initial", l.q)
	}
}

func cardTypes() []string { return []string{"Card", "Note", "Task"} }

func convergencePaths() []string {
	var ps []string
	for i := range 24 {
		ps = append(ps, fmt.Sprintf("acme/Board/n%02d", i))
	}
	for i := range 6 {
		ps = append(ps, fmt.Sprintf("acme/Board/deep/n%02d", i), fmt.Sprintf("beta/Board/n%02d", i))
	}
	return ps
}

// write runs one writer's operations: puts that move nodes between types
// and across the content threshold, and deletes.
func write(ctx context.Context, svc mesh.Store, paths []string, w, ops int, progressed func()) error {
	rng := rand.New(rand.NewPCG(uint64(w), 42))
	for i := range ops {
		p := paths[rng.IntN(len(paths))]
		if rng.IntN(10) < 3 {
			if err := svc.Delete(ctx, p); err != nil {
				return fmt.Errorf("writer %d op %d: delete %s: %w", w, i, p, err)
			}
			progressed()
			continue
		}
		n := mesh.Node{Path: p, NodeType: cardTypes()[rng.IntN(3)],
			Content: fmt.Appendf(nil, `{"n":%d,"writer":%d,"op":%d}`, rng.IntN(100), w, i)}
		if _, err := svc.Put(ctx, n); err != nil {
			return fmt.Errorf("writer %d op %d: put %s: %w", w, i, p, err)
		}
		progressed()
	}
	return nil
}

// liveResult is a live query patched frame by frame.
type liveResult struct {
	q     string
	rec   *rxtest.Recorder[mesh.Change]
	state *rx.BehaviorSubject[liveState]
	sub   rx.Subscription
}

// liveState is a live result as text: "path@version" rows, sorted.
type liveState struct {
	initial bool // an Initial has arrived
	rows    string
}

func subscribeLive(svc mesh.Store, q string) *liveResult {
	return subscribeLiveGated(svc, q, func(mesh.Change) {})
}

// patcher returns a function that applies one frame to a live result and
// returns the result so far. Its state is touched only by one
// subscription's frames, which rx serialises.
func patcher() func(mesh.Change) liveState {
	rows := map[string]int64{}
	initial := false
	return func(c mesh.Change) liveState {
		switch c.Kind {
		case mesh.Initial, mesh.Reset:
			initial = true
			clear(rows)
			for _, n := range c.Items {
				rows[n.Path] = n.Version
			}
		case mesh.Added, mesh.Updated:
			for _, n := range c.Items {
				rows[n.Path] = n.Version
			}
		case mesh.Removed:
			for _, n := range c.Items {
				delete(rows, n.Path)
			}
		}
		return liveState{initial: initial, rows: fingerprintRows(rows)}
	}
}

func fingerprintOf(items []mesh.Node) string {
	rows := map[string]int64{}
	for _, n := range items {
		rows[n.Path] = n.Version
	}
	return fingerprintRows(rows)
}

func fingerprintRows(rows map[string]int64) string {
	var b strings.Builder
	for _, p := range slices.Sorted(maps.Keys(rows)) {
		fmt.Fprintf(&b, "%s@%d ", p, rows[p])
	}
	return b.String()
}
