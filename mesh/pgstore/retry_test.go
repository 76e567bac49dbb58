package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// terminatePool ends every backend of the database but the listener's and
// the caller's, as pg_terminate_backend does in an outage drill, and waits
// until they have exited.
func terminatePool(t *testing.T, url string) {
	t.Helper()
	n := queryStrings(t, connect(t, url), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000))::text
		FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name <> $1`,
		listenerAppName)
	require.NotEqual(t, []string{"0"}, n, "the pool had a connection to terminate")
}

// killPooled terminates the backend of the pool's connection while holding
// it, then puts it back: the next read meets a connection the server has
// closed. (Held, it cannot be replaced by the pool's liveness ping, which
// only runs for a connection idle over a second.)
func killPooled(t *testing.T, s *Store, url string) {
	t.Helper()
	c, err := s.pool.Acquire(testContext(t))
	require.NoError(t, err)
	terminatePool(t, url)
	c.Release()
}

func TestAReadWhoseConnectionTheServerClosedIsAnsweredOnAFreshOne(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	s := openStore(t, url, Options{MaxConns: 1}) // one pool connection: the read must meet the dead one
	put(t, s, mesh.Node{Path: "acme/Docs/a", NodeType: "Article"})

	// Negative control: the same read without the retry fails on the
	// connection the server closed.
	killPooled(t, s, url)
	_, _, err := s.get(testContext(t), "acme/Docs/a")
	require.Error(t, err, "a read on a terminated backend fails without the retry")
	assert.True(t, connectionLost(err), "the failure is recognised as a lost connection: %v", err)

	put(t, s, mesh.Node{Path: "acme/Docs/b", NodeType: "Article"})
	killPooled(t, s, url)
	n, err := first(t, s.Get("acme/Docs/a"))
	require.NoError(t, err, "Get answers from a fresh connection")
	assert.Equal(t, "acme/Docs/a", n.Path)

	killPooled(t, s, url)
	initial := initialOf(t, s, "namespace:acme/Docs nodeType:Article")
	assert.Equal(t, []string{"acme/Docs/a", "acme/Docs/b"}, pathsOf(initial.Items), "a live query's read is retried too")
	assert.Equal(t, int64(2), s.Stats().RetriedReads)
}

func TestAReadTheServerRefusedIsNotRetried(t *testing.T) {
	t.Parallel()
	assert.False(t, connectionLost(nil))
	assert.False(t, connectionLost(fmt.Errorf("reading: %w", &mesh.UnavailableError{Op: "x", Err: assert.AnError})))
	assert.False(t, connectionLost(fmt.Errorf("wrapped: %w", errPg("42P01"))), "a missing table is an answer")
	assert.False(t, connectionLost(fmt.Errorf("wrapped: %w", errPg("57014"))), "a cancelled statement is the caller's")
	assert.True(t, connectionLost(fmt.Errorf("wrapped: %w", errPg("57P01"))), "admin_shutdown closes the connection")
}

func TestTheChangeFeedRetriesEveryFewSecondsWhileTheDatabaseRefusesConnections(t *testing.T) {
	t.Parallel()
	clk := rxtest.NewClock()
	url := pg.Database(t)
	s := openStore(t, url, Options{Clock: clk})
	feed := watchStream(t, "feed", s.Feed())
	admin := connect(t, url)
	db := queryStrings(t, admin, `SELECT current_database()`)[0]
	maintenance := connect(t, pg.Server(t).URL()) // a database may not refuse its own sessions
	listener := listenerPID(t, url)
	allow := func(on bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), testBudget) // also in Cleanup, after t.Context ends
		defer cancel()
		_, err := maintenance.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s ALLOW_CONNECTIONS %t`, pgx.Identifier{db}.Sanitize(), on))
		require.NoError(t, err)
	}
	allow(false)
	t.Cleanup(func() { allow(true) })
	var terminated bool
	require.NoError(t, admin.QueryRow(testContext(t), `SELECT pg_terminate_backend($1, 10000)`, listener).Scan(&terminated))
	require.True(t, terminated)

	// Every failed attempt doubles the wait, but never beyond
	// MaxReconnectDelay. Negative control: with the former 30 s cap the
	// waits go on 4 s, 8 s, 16 s and the fifth and later ones fail here.
	var waits []time.Duration
	for i := 1; i <= 7; i++ {
		down := feed.await(t, fmt.Sprintf("down state %d", i), nthDown(i))
		waits = append(waits, down.RetryIn)
		require.LessOrEqual(t, down.RetryIn, 2*time.Second, "attempt %d waits %s", i, down.RetryIn)
		clk.Advance(down.RetryIn)
	}
	assert.Equal(t, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second,
		2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}, waits)

	// The attempt after the last wait has failed as well (awaited before the
	// database accepts connections, so it cannot race the ALTER); then the
	// database accepts connections again and the feed is back within one
	// capped wait.
	down := feed.await(t, "down state 8", nthDown(8))
	allow(true)
	clk.Advance(down.RetryIn)
	feed.await(t, "the feed to be back", func(f FeedState) bool { return f.Connected && f.Reconnects == 1 })
}

func errPg(code string) error { return &pgconn.PgError{Code: code} }

// nthDown matches the n-th "feed is down" state of a replayed feed.
func nthDown(n int) func(FeedState) bool {
	seen := 0
	return func(f FeedState) bool {
		if !f.Connected {
			seen++
		}
		return seen == n && !f.Connected
	}
}
