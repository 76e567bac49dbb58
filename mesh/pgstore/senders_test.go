package pgstore

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

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

	terminate(t, url, listenerPID(t, url)) // the listener's backend has exited
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

// lookedUp records the process ids a store's pool looks up (its
// QueryTracer, a seam users have too).
type lookedUp struct {
	mu   sync.Mutex
	pids []uint32
}

func (l *lookedUp) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "FROM pg_stat_activity WHERE pid") && len(d.Args) == 1 {
		if pid, ok := d.Args[0].(int32); ok {
			l.mu.Lock()
			l.pids = append(l.pids, uint32(pid))
			l.mu.Unlock()
		}
	}
	return ctx
}

func (l *lookedUp) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the ids looked up since the last take.
func (l *lookedUp) take() []uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.pids
	l.pids = nil
	return out
}

// poolPID acquires a connection of s's pool for the rest of the test and
// returns its backend's process id.
func poolPID(t *testing.T, s *Store) uint32 {
	t.Helper()
	c, err := s.pool.Acquire(testContext(t))
	require.NoError(t, err)
	t.Cleanup(c.Release) // before the store closes (cleanups run last first)
	return c.Conn().PgConn().PID()
}

// terminate ends the backend pid server-side and waits (at most 10 s, on
// the server) for it to exit.
func terminate(t *testing.T, url string, pid uint32) {
	t.Helper()
	var done bool
	require.NoError(t, connect(t, url).QueryRow(testContext(t), `SELECT pg_terminate_backend($1, 10000)`,
		int32(pid)).Scan(&done))
	require.True(t, done, "backend %d has exited", pid)
}

// A backend of the store's own pool that the server ends (an
// administrator's pg_terminate_backend, idle_session_timeout) stays in the
// pool until the pool next uses it, but its process id is not trusted past
// sendersLifetime: after that, a backend of another role given the same id
// would have its rows believed. The pool's live backends are looked up
// again when their answer expires, and believed again (a write's row
// applied without a read). Negative control: with the pool's backends kept
// in a set of their own from AfterConnect to BeforeClose (before this
// change), the terminated backend is still trusted after the lifetime, so
// the first assertion after Advance fails.
func TestAPoolBackendEndedByTheServerIsNotTrustedPastTheSendersLifetime(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	clk := rxtest.NewClock()
	s := openStore(t, url, Options{Clock: clk})
	writer := openStore(t, url, Options{})
	const ns = "acme/Ended"
	put(t, writer, mesh.Node{Path: ns + "/seed", NodeType: "Article"})
	w := watchQuery(t, s, "namespace:"+ns+" nodeType:Article")
	w.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })

	pid := poolPID(t, s)
	require.True(t, s.senders.trusted(clk.Now(), pid), "a backend of the store's pool is trusted without a lookup")
	terminate(t, url, pid)
	require.True(t, s.senders.trusted(clk.Now(), pid), "within sendersLifetime of its connecting (the bound allowed)")

	clk.Advance(sendersLifetime + time.Nanosecond)
	assert.False(t, s.senders.trusted(clk.Now(), pid), "the ended backend is not trusted past sendersLifetime")
	trusting(t, s, writer, w, ns) // the pool's live backends are looked up again, and believed
	assert.False(t, s.senders.trusted(clk.Now(), pid), "its lookup found no backend: still not trusted")
	assert.False(t, s.senders.answered(pid), "no answer is kept for a backend that is gone")
}

// After the listener reconnects, the server may be another one (restarted,
// its process ids counting from the start again), so no answer from
// before is believed: a backend whose rows were believed is looked up
// again, and its rows are believed once the answer is in. Negative
// control: without senders.reset on reconnect (the cache kept across
// it), the writer's backend is still answered for after the Reset, and
// the writes after it are believed with no new lookup of it: both
// assertions after the Reset fail.
func TestAfterAListenerReconnectASenderIsLookedUpAgainBeforeItsRowsAreBelieved(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	clk := rxtest.NewClock()
	lookups := &lookedUp{}
	reader := openStore(t, url, Options{Clock: clk, QueryTracer: lookups})
	writer := openStore(t, url, Options{MaxConns: 1}) // one backend: one process id writes
	held, err := writer.pool.Acquire(testContext(t))
	require.NoError(t, err)
	writerPID := held.Conn().PgConn().PID()
	held.Release()
	feed := watchStream(t, "feed", reader.Feed())
	const ns = "acme/Again"
	w := watchQuery(t, reader, "namespace:"+ns+" nodeType:Article")
	w.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	trusting(t, reader, writer, w, ns)
	require.True(t, reader.senders.answered(writerPID), "the writer's backend was looked up")
	require.Contains(t, lookups.take(), writerPID)

	terminate(t, url, listenerOf(t, url, reader))
	down := feed.await(t, "the feed to go down", func(f FeedState) bool { return !f.Connected })
	clk.Advance(down.RetryIn)
	w.await(t, "a Reset after the reconnect", func(c mesh.Change) bool { return c.Kind == mesh.Reset })
	assert.False(t, reader.senders.answered(writerPID), "the answer from before the reconnect is forgotten")

	trusting(t, reader, writer, w, ns)
	assert.Contains(t, lookups.take(), writerPID, "the writer's backend was looked up again before its rows were believed")
}

// A lookup begun before a reset (a listener reconnect) describes a backend
// of what may be another server: its answer is not recorded, and the
// process id is looked up again. Negative control: without the generation
// check in learn, the answer is recorded and trusted.
func TestALookupBegunBeforeAResetIsNotRecorded(t *testing.T) {
	t.Parallel()
	clk := rxtest.NewClock()
	c := newSenders()
	const pid = 4242
	require.False(t, c.trusted(clk.Now(), pid), "not trusted before a lookup")
	require.Equal(t, uint32(pid), <-c.ask, "a lookup is queued")
	gen, start := c.begin(), clk.Now()
	c.reset() // the listener reconnected while the lookup ran
	c.learn(gen, start, pid, true, true)
	assert.False(t, c.answered(pid), "the answer from before the reset is not recorded")
	assert.False(t, c.trusted(clk.Now(), pid))
	require.Len(t, c.ask, 1, "the process id is looked up again")

	require.Equal(t, uint32(pid), <-c.ask)
	gen, start = c.begin(), clk.Now()
	c.learn(gen, start, pid, true, true) // control: a lookup begun after the reset is recorded
	assert.True(t, c.trusted(clk.Now(), pid))
}

// listenerOf returns the backend pid of s's listener, on a database other
// stores may use too: the one whose last statement was LISTEN on s's
// fence channel (it runs nothing after it until it reconnects).
func listenerOf(t *testing.T, url string, s *Store) uint32 {
	t.Helper()
	var pid int32
	require.NoError(t, connect(t, url).QueryRow(testContext(t), `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND query = $2`,
		listenerAppName, `LISTEN `+pgx.Identifier{s.fences.channel}.Sanitize()).Scan(&pid))
	return uint32(pid)
}

// A pool connection opened while a lookup of its process id ran (the id
// of a backend that has just exited) keeps its newer answer: the lookup's
// answer, about the backend before it, does not replace it. Control: a
// lookup begun after the connection opened is recorded.
func TestALookupOlderThanAPoolConnectionDoesNotReplaceIt(t *testing.T) {
	t.Parallel()
	clk := rxtest.NewClock()
	c := newSenders()
	const pid = 4343
	require.False(t, c.trusted(clk.Now(), pid))
	<-c.ask
	gen, start := c.begin(), clk.Now()
	clk.Advance(time.Millisecond)
	c.opened(clk.Now(), pid) // the pool's new backend got the id
	c.learn(gen, start, pid, false, true)
	assert.True(t, c.trusted(clk.Now(), pid), "the pool's backend is still trusted")

	c.learn(c.begin(), clk.Now().Add(time.Millisecond), pid, false, true)
	assert.False(t, c.trusted(clk.Now().Add(time.Millisecond), pid), "control: a later answer stands")
}
