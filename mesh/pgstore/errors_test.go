package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// A statement the database does not answer (here a read waiting for a lock
// another connection holds) fails once its budget has passed on the
// store's clock, not before, with an error naming what it waited for. The
// read stays blocked in the server until then: virtual time short of the
// budget cuts nothing. Negative control (run): with bounded on the real
// clock (context.WithTimeout, main at 658dd9b), virtual time past the
// budget cut nothing and the test failed with "the read did not fail when
// the store's clock passed its budget" after testBudget. (With the default
// budgets it passed so: 15s of real time ran out within testBudget.)
func TestAStalledStatementFailsOnceTheStoresClockPassesItsBudgetNamingWhatItWaitedFor(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	clk := rxtest.NewClock()
	// Budgets far longer than the test in real time: only the store's clock
	// can spend them. A FeedCheck longer still: the listener pings nothing.
	budgets := mesh.BudgetsFrom(time.Hour)
	s := openStore(t, url, Options{Clock: clk, Budgets: budgets, FeedCheck: 2 * time.Hour})
	const path = "acme/Docs/a"
	put(t, s, mesh.Node{Path: path, NodeType: "Article"})
	schema, err := SchemaName(mesh.Partition(path))
	require.NoError(t, err)

	ctx := testContext(t)
	locker, observer := connect(t, url), connect(t, url)
	tx, err := locker.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE `+pgx.Identifier{schema, mesh.TableFor(path)}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	read, stopRead := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() {
		_, err := rx.First(read, s.Get(path))
		result <- err
	}()
	released, ended := false, false
	release := func() {
		if !released {
			released = true
			stopRead()
			assert.NoError(t, tx.Rollback(context.WithoutCancel(ctx)))
		}
	}
	defer func() {
		release()
		if ended {
			return
		}
		select {
		case <-result:
		case <-time.After(testBudget):
			t.Error("the read did not end once the lock was released")
		}
	}()
	waiters := func() int {
		var n int
		require.NoError(t, observer.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1`, locker.PgConn().PID()).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return waiters() == 1 }, testBudget, 5*time.Millisecond,
		"the read to wait for the lock")

	budget := budgets.QueryInitial
	clk.Advance(budget - time.Nanosecond)
	select {
	case err := <-result:
		ended = true
		t.Fatalf("the read ended before its budget passed on the store's clock: %v", err)
	default:
	}
	assert.Equal(t, 1, waiters(), "short of its budget the read still waits in the server")

	clk.Advance(time.Nanosecond)
	var got error
	select {
	case got = <-result:
		ended = true
	case <-time.After(testBudget):
		release()
		t.Fatal("the read did not fail when the store's clock passed its budget")
	}
	require.Error(t, got)
	var unavailable *mesh.UnavailableError
	assert.ErrorAs(t, got, &unavailable, "the store could not find out: never absent")
	var spent *BudgetError
	require.ErrorAs(t, got, &spent, "the error says a budget ran out")
	assert.Equal(t, "reading "+path, spent.What, "and what was waited on")
	assert.Equal(t, budget, spent.Budget)
	assert.Contains(t, got.Error(), "no answer within "+budget.String()+" while reading "+path)
	assert.True(t, errors.Is(got, context.DeadlineExceeded), "a spent budget is a deadline exceeded")
	// Not the caller's giving up. Negative control (run): with BudgetError
	// unwrapping to the driver's error, which on this clock says the
	// context was cancelled, both failed.
	assert.False(t, errors.Is(got, context.Canceled), "a spent budget is not a cancellation")
	assert.NotContains(t, got.Error(), "canceled")
	require.Eventually(t, func() bool { return waiters() == 0 }, testBudget, 5*time.Millisecond,
		"the cut read to stop waiting in the server")
}

// A budget on the store's clock names itself only when it is what ended
// the wait: a caller's context that ends, or an enclosing budget that runs
// out first, is reported as it is. Negative control (run): with explain
// not checking the parent (only the cause), the enclosing budget's error
// was claimed by the inner one ("inner" named) and the test failed.
func TestABudgetNamesItselfOnlyWhenItEndedTheWait(t *testing.T) {
	clk := rxtest.NewClock()
	s := &Store{clk: clk}
	outer, cancelOuter, explainOuter := s.bounded(context.Background(), time.Second, "outer")
	defer cancelOuter()
	inner, cancelInner, explainInner := s.bounded(outer, time.Minute, "inner")
	defer cancelInner()
	clk.Advance(time.Second)
	<-inner.Done()
	err := errors.New("driver: interrupted")
	assert.Same(t, err, explainInner(err), "the inner budget did not end it")
	var spent *BudgetError
	require.ErrorAs(t, explainOuter(err), &spent)
	assert.Equal(t, "outer", spent.What)

	caller, stop := context.WithCancel(context.Background())
	ctx, cancel, explain := s.bounded(caller, time.Second, "reading")
	defer cancel()
	stop()
	<-ctx.Done()
	assert.Same(t, err, explain(err), "the caller gave up: not a budget")
	cancelInner()
	cancel()
	assert.Equal(t, 0, clk.Pending(), "a budget's cancel stops its timer")
}

// A budget on a virtual clock shows the driver no deadline (pgxpool copies
// one into its ping of an idle connection, and a virtual instant, months
// before the real one, would fail it at once); on the real clock (Options
// without a Clock) it is a deadline, which a real timer spends and which
// names itself as any budget does. Negative control (run): with
// clk.WithTimeout on the virtual clock the first assertion failed.
func TestABudgetIsADeadlineOnlyOnTheRealClock(t *testing.T) {
	virtual := &Store{clk: rxtest.NewClock()}
	ctx, cancel, _ := virtual.bounded(context.Background(), time.Minute, "reading")
	_, has := ctx.Deadline()
	cancel()
	assert.False(t, has, "no virtual instant reaches the driver")

	onReal := &Store{clk: clock.New(), realClock: true}
	ctx, cancel, explain := onReal.bounded(context.Background(), time.Millisecond, "reading")
	defer cancel()
	_, has = ctx.Deadline()
	assert.True(t, has, "the real clock's budget is a deadline")
	select {
	case <-ctx.Done():
	case <-time.After(testBudget):
		t.Fatal("a millisecond's budget did not end the context")
	}
	var spent *BudgetError
	require.ErrorAs(t, explain(errors.New("driver: timeout")), &spent)
	assert.Equal(t, "reading", spent.What)

	// The real clock given as Options.Clock takes the timer's way, which
	// its own timer spends as well.
	given := &Store{clk: clock.New()}
	ctx, cancel, explain = given.bounded(context.Background(), time.Millisecond, "writing")
	defer cancel()
	select {
	case <-ctx.Done():
	case <-time.After(testBudget):
		t.Fatal("a millisecond's budget on a given real clock did not end the context")
	}
	require.ErrorAs(t, explain(errors.New("driver: cancelled")), &spent)
	assert.Equal(t, "writing", spent.What)
}

// The key backfill connects with the listener's settings, but its reads must
// not stamp the listener's connection as alive: the silence check reads
// those stamps, and a dead listener would go unpinged for as long as a
// backfill of a large store read. The listener's own connection is stamped
// (the control within: a connection made as the backfill made it before,
// from a copy of the listener's settings, is stamped, and the backfill's
// was, so the assertion failed).
func TestTheKeyBackfillsConnectionIsNotStampedAsTheListeners(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	s := openStore(t, url, Options{Clock: rxtest.NewClock(), FeedCheck: 2 * time.Hour})
	ctx := testContext(t)

	backfill, err := pgx.ConnectConfig(ctx, s.backfillConfig())
	require.NoError(t, err)
	defer backfill.Close(ctx)
	_, stamped := backfill.PgConn().Conn().(*stampedConn)
	assert.False(t, stamped, "the backfill's reads are not the listener's")

	asListener, err := pgx.ConnectConfig(ctx, s.listenCfg.Copy())
	require.NoError(t, err)
	defer asListener.Close(ctx)
	_, stamped = asListener.PgConn().Conn().(*stampedConn)
	assert.True(t, stamped, "control: the listener's settings stamp its reads")
}
