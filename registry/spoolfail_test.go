//go:build linux

package registry

import (
	"log/slog"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

func TestAnUploadTheRegistryCannotSpoolIsA503WithRetryAfterNamingNoPath(t *testing.T) {
	archive := testkit.ModuleArchive(t, "Acme.Crm", "1.0.0", 1)
	spoolDir := t.TempDir()
	check := func(t *testing.T, f *fixture, got reply) {
		t.Helper()
		assert.Equal(t, http.StatusServiceUnavailable, got.status, "the registry's own failure, not the publisher's: %s", got.body)
		assert.Equal(t, "5", got.header.Get("Retry-After"), "a 503 says when to come back")
		assert.Contains(t, string(got.body), StageUpload)
		assert.NotContains(t, string(got.body), spoolDir, "the spool's path stays in the log")
		assert.NotEmpty(t, f.logs.At(slog.LevelError), "the cause is logged")
		assert.Empty(t, f.activation())
	}

	t.Run("the spool file cannot be created", func(t *testing.T) {
		missing := filepath.Join(spoolDir, "missing")
		f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) { o.SpoolDir = missing }})
		check(t, f, f.do(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, archive)))
	})

	t.Run("the spool file cannot be written", func(t *testing.T) {
		f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) { o.SpoolDir = spoolDir }})
		// A file size limit smaller than the archive: the spool's writes
		// fail with EFBIG (the Go runtime ignores SIGXFSZ), as on a full
		// disk. It is the process's: restored before anything else runs.
		var limit syscall.Rlimit
		require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &limit))
		small := syscall.Rlimit{Cur: uint64(len(archive) / 2), Max: limit.Max}
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &small))
		got := f.do(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, archive))
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit))
		check(t, f, got)

		// Control: with the limit lifted the same publication lands.
		got = f.do(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, archive))
		assert.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	})
	// Negative control (run): before the fix, the first case was a 503
	// without Retry-After and the second a 400 "reading the upload failed:
	// write <spool path>: file too large", which the client does not retry.
}
