package pgtest

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAHaltedServerRefusesThenResumesOnItsPortWithItsData(t *testing.T) {
	t.Parallel()
	bins := localBinaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	s, err := Config{Binaries: bins, TempDir: traversableTempDir(t)}.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Stop()) })
	db, err := s.CreateDatabase(ctx, "control")
	require.NoError(t, err)
	_, err = connect(t, db).Exec(ctx, `CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)`)
	require.NoError(t, err)

	require.NoError(t, s.Halt(ctx))
	require.Error(t, ping(ctx, db), "a halted server refuses connections")
	require.NoError(t, s.Halt(ctx), "halting twice is harmless")

	require.NoError(t, s.Resume(ctx))
	var v int
	require.NoError(t, connect(t, db).QueryRow(ctx, `SELECT v FROM kept`).Scan(&v), "same port, same data")
	assert.Equal(t, 7, v)

	require.NoError(t, s.Restart(ctx))
	require.NoError(t, ping(ctx, db), "a restarted server answers")
}

func TestAnExternalServerCannotBeControlled(t *testing.T) {
	t.Parallel()
	s := &Server{url: "postgres://example.invalid/db", created: map[string]bool{}}
	assert.True(t, errors.Is(s.Halt(t.Context()), ErrNotLocal))
	assert.True(t, errors.Is(s.Resume(t.Context()), ErrNotLocal))
	assert.True(t, errors.Is(s.Signal(syscall.SIGTERM), ErrNotLocal))
}
