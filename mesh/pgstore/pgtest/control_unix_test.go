//go:build unix

package pgtest

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAPausedServerHangsUntilItIsContinued(t *testing.T) {
	t.Parallel()
	bins := localBinaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	s, err := Config{Binaries: bins, TempDir: traversableTempDir(t)}.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Stop()) })
	conn := connect(t, s.URL())

	require.NoError(t, s.Signal(syscall.SIGSTOP))
	t.Cleanup(func() { _ = s.Signal(syscall.SIGCONT) }) // registered after Stop: runs before it
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = conn.Exec(short, `SELECT 1`)
	cancelShort()
	require.Error(t, err, "a statement on a paused server does not answer")
	assert.ErrorIs(t, err, context.DeadlineExceeded, "it hangs rather than refuses")

	require.NoError(t, s.Signal(syscall.SIGCONT))
	fresh, err := pgx.Connect(ctx, s.URL())
	require.NoError(t, err, "a continued server answers")
	require.NoError(t, fresh.Close(ctx))
}
