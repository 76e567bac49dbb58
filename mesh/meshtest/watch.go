package meshtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// watch is one live subscription under test: every frame is recorded (the
// recorder also checks the Rx grammar) and replayed to waits.
type watch[T any] struct {
	what   string
	rec    *rxtest.Recorder[T]
	frames *rx.ReplaySubject[T]
	sub    rx.Subscription
	bound  time.Duration
}

// watchStream subscribes to src until the test ends.
func watchStream[T any](t testing.TB, bound time.Duration, what string, src rx.Observable[T]) *watch[T] {
	t.Helper()
	w := &watch[T]{what: what, rec: rxtest.NewRecorder[T](nil), frames: rx.NewReplaySubject[T](0), bound: bound}
	w.sub = src.Subscribe(rx.NewObserver(
		func(v T) { w.rec.OnNext(v); w.frames.OnNext(v) },
		func(err error) { w.rec.OnError(err); w.frames.OnError(err) },
		func() { w.rec.OnCompleted(); w.frames.OnCompleted() },
	))
	t.Cleanup(w.sub.Unsubscribe)
	return w
}

func watchQuery(t testing.TB, bound time.Duration, svc mesh.Store, q string) *watch[mesh.Change] {
	t.Helper()
	return watchStream(t, bound, "query "+q, svc.Query(q))
}

// await returns the first frame, received so far or within the bound, that
// satisfies pred. It fails the test naming what it waited for when none
// comes, or when the stream ends first.
func (w *watch[T]) await(t testing.TB, waitingFor string, pred func(T) bool) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), w.bound)
	defer cancel()
	v, err := rx.First(ctx, rx.Filter[T](w.frames, pred))
	require.NoError(t, err, "%s: waiting (at most %s) for %s; received so far:\n%s",
		w.what, w.bound, waitingFor, describeAll(w.rec.Values()))
	return v
}

// received returns the frames so far, after checking the Rx grammar.
func (w *watch[T]) received(t testing.TB) []T {
	t.Helper()
	require.NoError(t, w.rec.GrammarErr(), "%s broke the Rx grammar", w.what)
	return w.rec.Values()
}

// firstOf returns the first value of src within bound.
func firstOf[T any](t testing.TB, bound time.Duration, what string, src rx.Observable[T]) T {
	t.Helper()
	v, err := firstErr(bound, src)
	require.NoError(t, err, "%s: waiting (at most %s) for the first value", what, bound)
	return v
}

func firstErr[T any](bound time.Duration, src rx.Observable[T]) (T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	return rx.First(ctx, src)
}

// initialOf returns the Initial frame of q.
func initialOf(t testing.TB, bound time.Duration, svc mesh.Store, q string) mesh.Change {
	t.Helper()
	c := firstOf(t, bound, "query "+q, svc.Query(q))
	require.Equal(t, mesh.Initial, c.Kind, "query %s: the first frame must be the Initial", q)
	return c
}

func kindOn(kind mesh.ChangeKind, path string) func(mesh.Change) bool {
	return func(c mesh.Change) bool {
		return c.Kind == kind && slices.ContainsFunc(c.Items, func(n mesh.Node) bool { return n.Path == path })
	}
}

func pathsOf(items []mesh.Node) []string {
	ps := make([]string, 0, len(items))
	for _, n := range items {
		ps = append(ps, n.Path)
	}
	return ps
}

func describe(v any) string {
	c, ok := v.(mesh.Change)
	if !ok {
		return fmt.Sprintf("%+v", v)
	}
	return fmt.Sprintf("%s %v partitions=%v", c.Kind, pathsOf(c.Items), c.Partitions)
}

func describeAll[T any](vs []T) string {
	var b strings.Builder
	for i, v := range vs {
		fmt.Fprintf(&b, "  %d: %s\n", i, describe(v))
	}
	if b.Len() == 0 {
		return "  (nothing)\n"
	}
	return b.String()
}
