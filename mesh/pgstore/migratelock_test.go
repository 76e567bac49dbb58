package pgstore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// applyMigrationsBefore applies, and records, the migrations whose names
// sort before name, as Migrate would have on an older build.
func applyMigrationsBefore(t *testing.T, conn *pgx.Conn, name string) {
	t.Helper()
	ctx := testContext(t)
	migrations, err := loadMigrations()
	require.NoError(t, err)
	under := slices.IndexFunc(migrations, func(m migration) bool { return m.name == name })
	require.Positive(t, under, "migration %s", name)
	_, err = conn.Exec(ctx, `CREATE TABLE public.meshrx_migrations (name TEXT PRIMARY KEY, checksum TEXT NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`)
	require.NoError(t, err)
	for _, m := range migrations[:under] {
		_, err := conn.Exec(ctx, m.sql)
		require.NoError(t, err, m.name)
		_, err = conn.Exec(ctx, `INSERT INTO public.meshrx_migrations (name, checksum) VALUES ($1, $2)`, m.name, m.checksum)
		require.NoError(t, err)
	}
}

// lockedBeforeMigration0007 returns a database migrated up to 0006, with
// partition acme, and a transaction holding a share lock on
// public.security_fold_types (a reader that has not ended), which 0007
// locks ACCESS EXCLUSIVE. The holder commits when the test ends.
func lockedBeforeMigration0007(t *testing.T) (url string, holder pgx.Tx) {
	t.Helper()
	ctx := testContext(t)
	url = pg.Database(t)
	conn := connect(t, url)
	applyMigrationsBefore(t, conn, "0007_security_fold_ascii.sql")
	_, err := EnsurePartition(ctx, conn, "acme")
	require.NoError(t, err)
	holder, err = connect(t, url).Begin(ctx)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `SELECT count(*) FROM public.security_fold_types`)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Rollback(context.Background()) })
	return url, holder
}

// writeNode starts a write to partition acme on a connection of its own
// (its triggers read public.security_fold_types) and returns the
// connection's backend and the write's outcome, bounded by testBudget.
func writeNode(t *testing.T, url, id string) (pid uint32, done <-chan error) {
	t.Helper()
	writer := connect(t, url)
	result := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), testBudget)
		defer cancel()
		_, err := writer.Exec(ctx, `INSERT INTO acme.mesh_nodes (namespace, id, node_type) VALUES ('acme/Docs', $1, 'Role')`, id)
		result <- err
	}()
	return writer.PgConn().PID(), result
}

func outcomeOf(t *testing.T, c <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(testBudget):
		t.Fatalf("%s did not end within %s", what, testBudget)
		return nil
	}
}

// waitBlockedLongerThan returns once backend pid has waited for a lock for
// longer than d in its current statement (as the server counts), polling
// pg_stat_activity, bounded by testBudget.
func waitBlockedLongerThan(t *testing.T, observer *pgx.Conn, pid uint32, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var waited bool
		err := observer.QueryRow(ctx, `SELECT coalesce(wait_event_type = 'Lock' AND now() - query_start > $2::interval, false)
			FROM pg_stat_activity WHERE pid = $1`, pid, d.String()).Scan(&waited)
		require.NoError(t, err, "waiting for backend %d to wait for a lock for %s", pid, d)
		if waited {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("backend %d did not wait for a lock for %s within %s", pid, d, testBudget)
		case <-tick.C:
		}
	}
}

// The budget is PostgreSQL's lock_timeout, on the server's clock: this
// test waits it out in real time (it is short).
//
// Control (in the test): without the bound (lock_timeout 0, as Migrate
// ran before TableLockBudget) the migrator waits past the budget, a
// writer that comes after it waits behind its lock request, and only
// cancelling the migrator's context frees the writer (so ctx is
// honoured). Control (run): with Migrate as it was (the caller's
// lock_timeout, 0, restored right after the migration lock), "the migration
// did not end within 30s".
func TestAMigrationWaitingForATableLockGivesUpWithinItsBudgetAndLetsWritersThrough(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const budget = time.Second
	url, _ := lockedBeforeMigration0007(t)
	observer, migrator := connect(t, url), connect(t, url)

	start := time.Now()
	migrated := make(chan error, 1)
	go func() { migrated <- migrate(ctx, migrator, budget) }()
	waitUntilBlocked(t, observer, migrator.PgConn().PID())
	writerPID, written := writeNode(t, url, "during") // queued behind the migrator's request until it gives up
	err := outcomeOf(t, migrated, "the migration")
	took := time.Since(start)
	var lockErr *LockTimeoutError
	require.ErrorAs(t, err, &lockErr)
	assert.Contains(t, lockErr.Lock, "0007_security_fold_ascii.sql", "it says which migration waited")
	assert.Equal(t, budget, lockErr.After)
	assert.Equal(t, "55P03", pgCode(err), "lock_not_available")
	assert.GreaterOrEqual(t, took, budget)
	assert.Less(t, took, budget+testBudget/2, "it gave up within its budget")
	require.NoError(t, outcomeOf(t, written, "the write"), "the write goes through while the reader still holds its lock (backend %d)", writerPID)
	assert.Equal(t, []string{"0"}, queryStrings(t, migrator, `SHOW lock_timeout`), "the migrator's own lock_timeout is as it was")
	applied := queryStrings(t, observer, `SELECT name FROM public.meshrx_migrations WHERE name >= '0007' ORDER BY 1`)
	assert.Empty(t, applied, "the migration changed nothing")

	// Control: no bound.
	cancelCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { migrated <- migrate(cancelCtx, migrator, 0) }()
	waitBlockedLongerThan(t, observer, migrator.PgConn().PID(), budget)
	writerPID, written = writeNode(t, url, "behind")
	waitUntilBlocked(t, observer, writerPID)
	waitBlockedLongerThan(t, observer, migrator.PgConn().PID(), 2*budget)
	waitUntilBlocked(t, observer, writerPID) // still: the reader lets the writer through, the migrator's request does not
	cancel()
	err = outcomeOf(t, migrated, "the unbounded migration, cancelled")
	assert.True(t, errors.Is(err, context.Canceled), "the migrator's context ends its wait: %v", err)
	require.NoError(t, outcomeOf(t, written, "the write behind the migration"))
}

// Control: once the reader ends, the same Migrate succeeds. Control (run):
// without Migrate's restore at the end, the caller's transaction reads "5s"
// (TableLockBudget) instead of "9s": a savepoint's release keeps a
// local setting.
func TestMigrateLeavesTheCallersLockTimeoutAsItWas(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url, holder := lockedBeforeMigration0007(t)
	conn := connect(t, url)
	_, err := conn.Exec(ctx, `SET lock_timeout = '7s'`)
	require.NoError(t, err)
	require.NoError(t, holder.Commit(ctx))

	require.NoError(t, Migrate(ctx, conn))
	assert.Equal(t, []string{"7s"}, queryStrings(t, conn, `SHOW lock_timeout`), "after Migrate on a connection")

	tx, err := connect(t, url).Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL lock_timeout = '9s'`)
	require.NoError(t, err)
	require.NoError(t, Migrate(ctx, tx))
	assert.Equal(t, []string{"9s"}, queryStrings(t, tx.Conn(), `SHOW lock_timeout`), "after Migrate in the caller's transaction (a savepoint)")
}

// Adding a gated type (Open) locks public.security_fold_types ACCESS
// EXCLUSIVE, and every write's triggers read that table. Control (in the
// test): without the bound the adder waits past the budget with a writer
// behind it, until its context is cancelled. Control (run): with
// LockBudget (30s) as before, "it gave up within its budget" fails (30.0s).
func TestAddingAGatedTypeGivesUpWithinItsBudgetWhileATableLockIsHeldAndLetsWritersThrough(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const budget = time.Second
	url := migratedDatabase(t)
	observer, adder := connect(t, url), connect(t, url)
	_, err := EnsurePartition(ctx, observer, "acme")
	require.NoError(t, err)
	holder, err := connect(t, url).Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(context.Background()) }()
	_, err = holder.Exec(ctx, `SELECT count(*) FROM public.security_fold_types`)
	require.NoError(t, err)

	start := time.Now()
	added := make(chan error, 1)
	go func() { added <- addFoldTypes(ctx, adder, []string{"Invoice"}, budget) }()
	waitUntilBlocked(t, observer, adder.PgConn().PID())
	writerPID, written := writeNode(t, url, "during")
	err = outcomeOf(t, added, "adding the gated type")
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, budget)
	assert.Less(t, took, budget+testBudget/2, "it gave up within its budget")
	var lockErr *LockTimeoutError
	require.ErrorAs(t, err, &lockErr)
	assert.Contains(t, lockErr.Lock, "public.security_fold_types")
	assert.Equal(t, budget, lockErr.After)
	require.NoError(t, outcomeOf(t, written, "the write"), "the write goes through while the reader still holds its lock (backend %d)", writerPID)
	assert.Empty(t, queryStrings(t, observer, `SELECT node_type FROM public.security_fold_types`), "nothing was added")

	cancelCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { added <- addFoldTypes(cancelCtx, adder, []string{"Invoice"}, 0) }()
	waitBlockedLongerThan(t, observer, adder.PgConn().PID(), budget)
	writerPID, written = writeNode(t, url, "behind")
	waitUntilBlocked(t, observer, writerPID)
	cancel()
	err = outcomeOf(t, added, "the unbounded adder, cancelled")
	assert.True(t, errors.Is(err, context.Canceled), "the adder's context ends its wait: %v", err)
	require.NoError(t, outcomeOf(t, written, "the write behind the adder"))
}

// Migrate reads public.meshrx_migrations, and records each migration it
// applies there, under the same budget as its other table locks: a
// transaction holding a lock on that table (an ALTER, a LOCK TABLE, an
// index build) makes it a *LockTimeoutError naming the table and what
// Migrate was doing, and the whole migration is rolled back. The budget is
// the server's lock_timeout (real time, short). Control (in the test):
// once the holder ends, the same Migrate succeeds. Control (run): without
// the typed error on recording, "recording" fails errors.As (it was a
// plain "pgstore: recording migration …" error); without it on the read,
// "reading" does.
func TestALockHeldOnTheMigrationsTableIsALockTimeoutNamingIt(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const budget = time.Second
	for _, c := range []struct {
		what, mode, wants string
	}{
		// ACCESS EXCLUSIVE keeps Migrate from reading the table; SHARE lets
		// it read, and keeps it from inserting.
		{"reading", "ACCESS EXCLUSIVE", "reading the applied migrations"},
		{"recording", "SHARE", "recording migration 0009_security_fold_one_type_check.sql"},
	} {
		url := pg.Database(t)
		observer, migrator := connect(t, url), connect(t, url)
		applyMigrationsBefore(t, observer, "0009_security_fold_one_type_check.sql")
		holder, err := connect(t, url).Begin(ctx)
		require.NoError(t, err)
		_, err = holder.Exec(ctx, `LOCK TABLE public.meshrx_migrations IN `+c.mode+` MODE`)
		require.NoError(t, err)

		migrated := make(chan error, 1)
		go func() { migrated <- migrate(ctx, migrator, budget) }()
		waitUntilBlocked(t, observer, migrator.PgConn().PID())
		err = outcomeOf(t, migrated, "the migration")
		var lockErr *LockTimeoutError
		require.ErrorAs(t, err, &lockErr, c.what)
		assert.Contains(t, lockErr.Lock, "public.meshrx_migrations", c.what)
		assert.Contains(t, lockErr.Lock, c.wants, c.what)
		assert.Equal(t, budget, lockErr.After, c.what)
		assert.Equal(t, "55P03", pgCode(err), c.what)
		require.NoError(t, holder.Rollback(ctx))
		assert.Empty(t, queryStrings(t, observer, `SELECT name FROM public.meshrx_migrations WHERE name >= '0009'`), "%s: nothing was applied", c.what)
		assert.Equal(t, []string{"0"}, queryStrings(t, migrator, `SHOW lock_timeout`), "%s: the migrator's lock_timeout is as it was", c.what)

		require.NoError(t, migrate(ctx, migrator, budget), "control: %s without the holder", c.what)
	}
}

// CheckMigrated (Open under SkipMigrate) reads the same table under the
// same budget. Control (in the test): once the holder ends it answers nil.
// Control (run): without its lock_timeout it waited for the holder until
// its context ended ("the check did not end within 30s"); without the
// restore, the caller's transaction read "5s" instead of "9s".
func TestCheckMigratedWaitingForALockOnTheMigrationsTableGivesUpWithinItsBudget(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const budget = time.Second
	url := migratedDatabase(t)
	observer, checker := connect(t, url), connect(t, url)
	holder, err := connect(t, url).Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(context.Background()) }()
	_, err = holder.Exec(ctx, `LOCK TABLE public.meshrx_migrations IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	checked := make(chan error, 1)
	go func() { checked <- checkMigrated(ctx, checker, budget) }()
	waitUntilBlocked(t, observer, checker.PgConn().PID())
	err = outcomeOf(t, checked, "the check")
	var lockErr *LockTimeoutError
	require.ErrorAs(t, err, &lockErr)
	assert.Contains(t, lockErr.Lock, "public.meshrx_migrations")
	assert.Equal(t, budget, lockErr.After)
	assert.Equal(t, "55P03", pgCode(err))
	assert.Equal(t, []string{"0"}, queryStrings(t, checker, `SHOW lock_timeout`), "the checker's lock_timeout is as it was")

	require.NoError(t, holder.Rollback(ctx))
	require.NoError(t, checkMigrated(ctx, checker, budget), "control: without the holder")

	tx, err := checker.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL lock_timeout = '9s'`)
	require.NoError(t, err)
	require.NoError(t, CheckMigrated(ctx, tx))
	assert.Equal(t, []string{"9s"}, queryStrings(t, tx.Conn(), `SHOW lock_timeout`), "in the caller's transaction (a savepoint)")
}
