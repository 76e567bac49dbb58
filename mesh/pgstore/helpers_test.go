package pgstore

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// openStore opens a Store on url, closed when t ends. Pools are kept small:
// many tests share one server.
func openStore(t *testing.T, url string, opts Options) *Store {
	t.Helper()
	if opts.MaxConns == 0 {
		opts.MaxConns = 4
	}
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	s, err := Open(ctx, url, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// put writes n and fails the test when the store refuses it.
func put(t *testing.T, s mesh.Store, n mesh.Node) mesh.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	stored, err := s.Put(ctx, n)
	require.NoError(t, err, "put %s", n.Path)
	return stored
}

func del(t *testing.T, s mesh.Store, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	require.NoError(t, s.Delete(ctx, path), "delete %s", path)
}

// first returns the first value of src, or its error, within testBudget.
func first[T any](t *testing.T, src rx.Observable[T]) (T, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	return rx.First(ctx, src)
}

// initialOf returns the Initial frame of q on s.
func initialOf(t *testing.T, s mesh.Store, q string) mesh.Change {
	t.Helper()
	c, err := first(t, s.Query(q))
	require.NoError(t, err, "query %s", q)
	require.Equal(t, mesh.Initial, c.Kind, "query %s: the first frame is the Initial", q)
	return c
}

func pathsOf(nodes []mesh.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Path)
	}
	return out
}

// watch is a live subscription under test: every value is recorded (the
// recorder also checks the Rx grammar) and replayed to waits.
type watch[T any] struct {
	what   string
	rec    *rxtest.Recorder[T]
	frames *rx.ReplaySubject[T]
}

// watchStream subscribes to src until the test ends.
func watchStream[T any](t *testing.T, what string, src rx.Observable[T]) *watch[T] {
	t.Helper()
	w := &watch[T]{what: what, rec: rxtest.NewRecorder[T](nil), frames: rx.NewReplaySubject[T](0)}
	sub := src.Subscribe(rx.NewObserver(
		func(v T) { w.rec.OnNext(v); w.frames.OnNext(v) },
		func(err error) { w.rec.OnError(err); w.frames.OnError(err) },
		func() { w.rec.OnCompleted(); w.frames.OnCompleted() },
	))
	t.Cleanup(sub.Unsubscribe)
	return w
}

func watchQuery(t *testing.T, s mesh.Store, q string) *watch[mesh.Change] {
	t.Helper()
	return watchStream(t, "query "+q, s.Query(q))
}

// await returns the first value so far, or within testBudget, that
// satisfies pred; it fails the test naming what it waited for.
func (w *watch[T]) await(t *testing.T, waitingFor string, pred func(T) bool) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	v, err := rx.First(ctx, rx.Filter[T](w.frames, pred))
	require.NoError(t, err, "%s: waiting (at most %s) for %s; received so far: %v", w.what, testBudget, waitingFor, w.rec.Values())
	return v
}

// end waits (at most testBudget) for the stream to terminate and returns
// its error, nil when it completed.
func (w *watch[T]) end(t *testing.T) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	_, err := rx.Collect(ctx, w.frames)
	require.True(t, w.rec.Terminated(), "%s: waiting (at most %s) for the stream to end: %v", w.what, testBudget, err)
	return w.rec.Err()
}

func (w *watch[T]) values(t *testing.T) []T {
	t.Helper()
	require.NoError(t, w.rec.GrammarErr(), "%s broke the Rx grammar", w.what)
	return w.rec.Values()
}

func kindOn(kind mesh.ChangeKind, path string) func(mesh.Change) bool {
	return func(c mesh.Change) bool {
		return c.Kind == kind && slices.ContainsFunc(c.Items, func(n mesh.Node) bool { return n.Path == path })
	}
}

func noticeOf(path string) func(mesh.ChangeNotice) bool {
	return func(n mesh.ChangeNotice) bool { return n.Path == path }
}

// statements records the SQL of every statement a pool runs (pgx's
// health-check pings aside).
type statements struct {
	mu  sync.Mutex
	sql []string
}

func (r *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.HasPrefix(d.SQL, "-- ping") && !strings.HasPrefix(d.SQL, "-- routing") && !strings.HasPrefix(d.SQL, "-- fence") {
		r.mu.Lock()
		r.sql = append(r.sql, d.SQL)
		r.mu.Unlock()
	}
	return ctx
}

func (r *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A typed read sends its routing check and its rows as one batch (one
// round trip): its row statement counts, the check does not.
func (r *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (r *statements) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if !strings.HasPrefix(d.SQL, "-- routing") {
		r.mu.Lock()
		r.sql = append(r.sql, d.SQL)
		r.mu.Unlock()
	}
}

func (r *statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// take returns the statements recorded since the last take.
func (r *statements) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sql
	r.sql = nil
	return out
}

// logLines records log records as "msg key=value ..." lines.
type logLines struct {
	sink  *logSink
	attrs []slog.Attr
}

type logSink struct {
	mu    sync.Mutex
	lines []string
}

func newLogLines() *logLines { return &logLines{sink: &logSink{}} }

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }

func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	for _, a := range l.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.sink.mu.Lock()
	l.sink.lines = append(l.sink.lines, b.String())
	l.sink.mu.Unlock()
	return nil
}

func (l *logLines) WithAttrs(as []slog.Attr) slog.Handler {
	return &logLines{sink: l.sink, attrs: append(slices.Clone(l.attrs), as...)}
}

func (l *logLines) WithGroup(string) slog.Handler { return l }

// matching returns the lines that start with prefix.
func (l *logLines) matching(prefix string) []string {
	l.sink.mu.Lock()
	defer l.sink.mu.Unlock()
	var out []string
	for _, line := range l.sink.lines {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return out
}

// accessTypes are the security types a store's user declares as gated, as
// auth does (auth.SecurityTypes); mesh names none of its own.
var accessTypes = []string{"Role", "GroupMembership", "AccessAssignment", "PartitionAccessPolicy"}
