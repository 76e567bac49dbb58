package pgstore

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// stuckLookups holds every sender lookup a store's pool runs before
// unstick (the pool's QueryTracer, a seam users have too), then fails it:
// a slow lookup, then a failed one. Later lookups run as they are.
type stuckLookups struct {
	started chan struct{} // capacity 1: a lookup is being held
	release chan struct{} // closed by the test
	once    sync.Once
}

func newStuckLookups() *stuckLookups {
	return &stuckLookups{started: make(chan struct{}, 1), release: make(chan struct{})}
}

func (l *stuckLookups) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(d.SQL, "FROM pg_stat_activity WHERE pid") {
		return ctx
	}
	select {
	case <-l.release:
		return ctx
	default:
	}
	select {
	case l.started <- struct{}{}:
	default:
	}
	select {
	case <-l.release:
	case <-ctx.Done(): // the lookup's own budget
	}
	failed, cancel := context.WithCancel(ctx)
	cancel() // the statement fails as a lookup that timed out would
	return failed
}

func (l *stuckLookups) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (l *stuckLookups) unstick() { l.once.Do(func() { close(l.release) }) }

// A sender lookup that hangs and then fails costs the listener nothing:
// while it hangs, every write's frame still arrives (its path is read,
// since its row is not yet believed), and when it fails the listener's
// connection is intact — no reconnect, no Reset — the failure is logged
// with its cause, and the next notice from that backend is looked up
// again and believed. Negative control: with the lookup on the listener's
// own connection (before this change), the listener waits in the lookup,
// so no frame arrives while it hangs (the first await fails), and a
// lookup that timed out closed the listener's connection: a reconnect and
// a Reset of every live query, with nothing logged of why.
func TestASlowSenderLookupCostsTheListenerNothing(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	lookups := newStuckLookups()
	t.Cleanup(lookups.unstick)
	logs := newLogLines()
	reader := openStore(t, url, Options{QueryTracer: lookups, Logger: slog.New(logs)})
	writer := openStore(t, url, Options{})
	const ns = "acme/Stuck"
	put(t, writer, mesh.Node{Path: ns + "/seed", NodeType: "Article"})
	w := watchQuery(t, reader, "namespace:"+ns+" nodeType:Article")
	w.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })

	put(t, writer, mesh.Node{Path: ns + "/a", NodeType: "Article"})
	w.await(t, "Added a", kindOn(mesh.Added, ns+"/a"))
	select {
	case <-lookups.started:
	case <-testContext(t).Done():
		t.Fatalf("waiting (at most %s) for the lookup of the writer's backend", testBudget)
	}
	for _, p := range []string{"b", "c", "d"} { // while the lookup hangs
		put(t, writer, mesh.Node{Path: ns + "/" + p, NodeType: "Article"})
		w.await(t, "Added "+p+" while the lookup hangs", kindOn(mesh.Added, ns+"/"+p))
	}
	assert.Zero(t, reader.Stats().NoticeRows, "no row was believed before its sender's role was known")

	lookups.unstick()
	trusting(t, reader, writer, w, ns) // looked up again, and believed
	st := reader.Stats()
	assert.Zero(t, st.Reconnects, "the listener kept its connection")
	assert.Zero(t, st.Resets, "no live query was reset")
	assert.NotEmpty(t, logs.matching("pgstore: looking up the role of a change notice's sender failed"), "the failed lookup is logged")
	assert.Empty(t, logs.matching("pgstore: resetting every live query"))
}

// Every Reset of the live queries is logged with why it happens and the
// error behind it. Control: the same log holds no such line before the
// listener's connection is ended.
func TestAResetOfTheLiveQueriesIsLoggedWithItsCause(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	logs := newLogLines()
	clk := rxtest.NewClock()
	s := openStore(t, url, Options{Logger: slog.New(logs), Clock: clk})
	feed := watchStream(t, "feed", s.Feed())
	put(t, s, mesh.Node{Path: "acme/Docs/a", NodeType: "Article"})
	live := watchQuery(t, s, "namespace:acme/Docs nodeType:Article")
	live.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	require.Empty(t, logs.matching("pgstore: resetting every live query"))

	var terminated bool
	require.NoError(t, connect(t, url).QueryRow(testContext(t), `SELECT pg_terminate_backend($1, 10000)`,
		listenerPID(t, url)).Scan(&terminated))
	require.True(t, terminated)
	down := feed.await(t, "the feed to go down", func(f FeedState) bool { return !f.Connected })
	clk.Advance(down.RetryIn)
	live.await(t, "a Reset after the reconnect", func(c mesh.Change) bool { return c.Kind == mesh.Reset })
	lines := logs.matching("pgstore: resetting every live query")
	require.Len(t, lines, 1)
	assert.Contains(t, lines[0], "the change feed was lost")
	assert.Contains(t, lines[0], "cause=")
	assert.Contains(t, lines[0], "57P01", "the error that ended the listener's connection (admin_shutdown)")
	assert.Contains(t, lines[0], "queries=1")
}
