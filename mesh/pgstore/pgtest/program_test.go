package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// askForProgramDatabase runs programDatabase on a fresh goroutine, as the
// testing package runs a test, and reports how it ended.
func askForProgramDatabase(t *testing.T, plan Plan) (string, *outcome) {
	t.Helper()
	o := &outcome{TB: t}
	var url string
	done := make(chan struct{})
	go func() {
		defer close(done)
		url = programDatabase(o, "program", plan)
	}()
	select {
	case <-done:
	case <-time.After(DefaultStartBudget + time.Minute):
		t.Fatal("programDatabase did not return within the start budget")
	}
	return url, o
}

func TestAProgramStartsItsOwnServerWhereTheServerProgramsAre(t *testing.T) {
	url, o := askForProgramDatabase(t, Plan{Mode: ModeLocal})
	assert.Empty(t, url, "no -pg: the program starts its own")
	assert.Empty(t, o.skipped)
	assert.Empty(t, o.failed)
}

func TestAProgramsTestSkipsOrFailsAsAHarnessDoesWithoutPostgreSQL(t *testing.T) {
	none := func(getenv func(string) string) Plan { return Decide(getenv, Binaries{}, &NotFoundError{}) }

	url, o := askForProgramDatabase(t, none(func(string) string { return "" }))
	assert.Empty(t, url)
	assert.Empty(t, o.failed)
	assert.Contains(t, o.skipped, "apt-get install -y postgresql")

	required := func(k string) string { return map[string]string{EnvRequire: "1"}[k] }
	url, o = askForProgramDatabase(t, none(required))
	assert.Empty(t, url)
	assert.Empty(t, o.skipped)
	assert.Contains(t, o.failed, "apt-get install -y postgresql")
}

// On an external server the program gets a database of its own, not the
// server's, and it is gone when the test ends.
func TestAProgramOnAnExternalServerGetsAFreshDatabaseDroppedWhenTheTestEnds(t *testing.T) {
	server := pg.Server(t).URL()
	var db string
	t.Run("program", func(t *testing.T) {
		var o *outcome
		db, o = askForProgramDatabase(t, Plan{Mode: ModeExternal, URL: server})
		require.Empty(t, o.failed)
		require.NotEmpty(t, db)
		assert.NotEqual(t, server, db, "a database of its own, not the server's")
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, db)
		require.NoError(t, err)
		require.NoError(t, conn.Close(ctx))
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg, err := pgx.ParseConfig(db)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, server)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var exists bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", cfg.Database).Scan(&exists))
	assert.False(t, exists, "the program's database is dropped when its test ends")
	// Control: the server's own database is still there, so the query can
	// tell a present database from a dropped one.
	server0, err := pgx.ParseConfig(server)
	require.NoError(t, err)
	require.NoError(t, conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", server0.Database).Scan(&exists))
	assert.True(t, exists)
}
