package notifications_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// convergence bounds, in real time, each wait for a store to answer or a live
// frame to arrive. It is a failure bound, never a pause: the memory store
// answers synchronously, PostgreSQL within milliseconds.
const convergence = 30 * time.Second

// fixture is one store under test, on a virtual clock.
type fixture struct {
	store mesh.Store
	clk   *rxtest.Clock
}

// eachStore runs f once on the memory store and once on PostgreSQL (skipped,
// with the reason, when this machine has no PostgreSQL server).
func eachStore(t *testing.T, f func(t *testing.T, fx fixture)) {
	t.Run("memstore", func(t *testing.T) { f(t, newMem(t)) })
	t.Run("pgstore", func(t *testing.T) { f(t, newPG(t)) })
}

func newMem(t *testing.T) fixture {
	t.Helper()
	clk := rxtest.NewClock()
	s, err := memstore.New(memstore.Options{Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return fixture{store: s, clk: clk}
}

func newPG(t *testing.T) fixture {
	t.Helper()
	url := pg.Database(t)
	clk := rxtest.NewClock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := pgstore.Open(ctx, url, pgstore.Options{Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return fixture{store: s, clk: clk}
}

// service returns a notifications service on the fixture's store.
func (fx fixture) service() *notifications.Service {
	return &notifications.Service{Mesh: fx.store, Clock: fx.clk}
}

// ctx bounds one call of the test.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), convergence)
	t.Cleanup(cancel)
	return c
}

// get reads the node at path; ok is false when it is absent.
func get(t *testing.T, s mesh.Store, path string) (mesh.Node, bool) {
	t.Helper()
	n, err := rx.First(ctx(t), s.Get(path))
	if err == rx.ErrEmpty {
		return mesh.Node{}, false
	}
	require.NoError(t, err, "get %s", path)
	return n, true
}

// initial reads the Initial frame of q.
func initial(t *testing.T, s mesh.Store, q string) []mesh.Node {
	t.Helper()
	c, err := rx.First(ctx(t), s.Query(q))
	require.NoError(t, err, "query %s", q)
	require.Equal(t, mesh.Initial, c.Kind)
	return c.Items
}

// paths returns the paths of nodes, sorted.
func paths(nodes []mesh.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Path)
	}
	slices.Sort(out)
	return out
}

// contentOf decodes a node's content.
func contentOf(t *testing.T, n mesh.Node) notifications.Notification {
	t.Helper()
	var c notifications.Notification
	require.NoError(t, json.Unmarshal(n.Content, &c), "content of %s", n.Path)
	return c
}

// watcher records the states of a bell.
type watcher struct {
	sub    rx.Subscription
	mu     sync.Mutex
	states []notifications.BellState
	err    error
	done   bool
	signal chan struct{} // receives after each notification
}

func watch(t *testing.T, bell rx.Observable[notifications.BellState]) *watcher {
	t.Helper()
	w := &watcher{signal: make(chan struct{}, 1)}
	poke := func() {
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
	w.sub = bell.Subscribe(rx.NewObserver(
		func(s notifications.BellState) {
			w.mu.Lock()
			w.states = append(w.states, s)
			w.mu.Unlock()
			poke()
		},
		func(err error) {
			w.mu.Lock()
			w.err, w.done = err, true
			w.mu.Unlock()
			poke()
		},
		func() {
			w.mu.Lock()
			w.done = true
			w.mu.Unlock()
			poke()
		},
	))
	t.Cleanup(w.sub.Unsubscribe)
	return w
}

// latest returns the last state and how many there were.
func (w *watcher) latest() (notifications.BellState, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.states) == 0 {
		return notifications.BellState{}, 0
	}
	return w.states[len(w.states)-1], len(w.states)
}

// await waits until the latest state satisfies pred, and returns it. It fails
// the test when the bell ends or convergence passes first, showing the last
// state seen.
func (w *watcher) await(t *testing.T, what string, pred func(notifications.BellState) bool) notifications.BellState {
	t.Helper()
	deadline := time.NewTimer(convergence)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		var last *notifications.BellState
		if len(w.states) > 0 {
			last = &w.states[len(w.states)-1]
		}
		done, err := w.done, w.err
		w.mu.Unlock()
		if last != nil && pred(*last) {
			return *last
		}
		if done {
			require.FailNow(t, "the bell ended before "+what, "err: %v, last state: %s", err, describe(last))
		}
		select {
		case <-w.signal:
		case <-deadline.C:
			require.FailNow(t, "no bell state within the bound: "+what, "last state: %s", describe(last))
		}
	}
}

// titles lists the titles of a state, in display order (groups in order,
// items in order within each).
func titles(s notifications.BellState) []string {
	var out []string
	for _, g := range s.Groups {
		for _, n := range g.Items {
			out = append(out, n.Title)
		}
	}
	return out
}

func describe(s *notifications.BellState) string {
	if s == nil {
		return "none"
	}
	var b strings.Builder
	for _, g := range s.Groups {
		b.WriteString("[" + g.Source + ":")
		for _, n := range g.Items {
			b.WriteString(" " + n.Title)
		}
		b.WriteString("]")
	}
	return b.String()
}

// recordingMesh is a real store that also records the queries it was asked
// and can run a hook after each write, to stop a caller at a chosen point.
type recordingMesh struct {
	mesh.Store

	mu          sync.Mutex
	queries     []string
	frames      map[string]int // frames the store delivered, by query
	puts        int
	deletes     int
	afterPut    func(n int) // called after the n-th successful Put
	afterDelete func(n int) // called after the n-th successful Delete
}

func (r *recordingMesh) Query(q string) rx.Observable[mesh.Change] {
	r.mu.Lock()
	r.queries = append(r.queries, q)
	r.mu.Unlock()
	return rx.Do(r.Store.Query(q), func(mesh.Change) {
		r.mu.Lock()
		if r.frames == nil {
			r.frames = map[string]int{}
		}
		r.frames[q]++
		r.mu.Unlock()
	})
}

// framesOf returns how many frames the store delivered for q, to every
// subscriber of it.
func (r *recordingMesh) framesOf(q string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frames[q]
}

// count returns how many times q was asked.
func (r *recordingMesh) count(q string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, asked := range r.queries {
		if asked == q {
			n++
		}
	}
	return n
}

func (r *recordingMesh) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	stored, err := r.Store.Put(ctx, n)
	if err == nil {
		r.mu.Lock()
		r.puts++
		k, hook := r.puts, r.afterPut
		r.mu.Unlock()
		if hook != nil {
			hook(k)
		}
	}
	return stored, err
}

func (r *recordingMesh) Delete(ctx context.Context, path string) error {
	err := r.Store.Delete(ctx, path)
	if err == nil {
		r.mu.Lock()
		r.deletes++
		k, hook := r.deletes, r.afterDelete
		r.mu.Unlock()
		if hook != nil {
			hook(k)
		}
	}
	return err
}

func (r *recordingMesh) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.queries)
}
