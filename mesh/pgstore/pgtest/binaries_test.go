package pgtest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeInstall creates dir holding the named programs (executable unless the
// name ends in "-noexec", which is created without the x bits).
func fakeInstall(t *testing.T, dir string, programs ...string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, p := range programs {
		mode := os.FileMode(0o755)
		if name, ok := strings.CutSuffix(p, "-noexec"); ok {
			p, mode = name, 0o644
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte("#!/bin/sh\n"), mode))
	}
	return dir
}

func allPrograms() []string { return []string{"initdb", "pg_ctl", "postgres"} }

func TestBinaryDiscoveryPrefersPathThenTheHighestCompleteVersion(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "usr-lib-postgresql")
	fakeInstall(t, filepath.Join(root, "9.6", "bin"), allPrograms()...)
	fakeInstall(t, filepath.Join(root, "10", "bin"), allPrograms()...)
	v15 := fakeInstall(t, filepath.Join(root, "15", "bin"), allPrograms()...)
	fakeInstall(t, filepath.Join(root, "16", "bin"), "initdb", "pg_ctl")                    // incomplete: skipped
	fakeInstall(t, filepath.Join(root, "17", "bin"), "initdb", "pg_ctl", "postgres-noexec") // not executable: skipped
	fakeInstall(t, filepath.Join(root, "common", "bin"), allPrograms()...)                  // not a version: ignored
	partial := fakeInstall(t, filepath.Join(tmp, "path-partial"), "initdb")
	onPath := fakeInstall(t, filepath.Join(tmp, "path-full"), allPrograms()...)
	empty := fakeInstall(t, filepath.Join(tmp, "path-empty"))

	t.Run("the highest complete version, compared as numbers", func(t *testing.T) {
		// Compared as text, "9.6" would win; 16 and 17 are incomplete.
		b, err := FindBinaries(strings.Join([]string{empty, partial}, string(os.PathListSeparator)), root)
		require.NoError(t, err)
		assert.Equal(t, Binaries{
			Initdb:   filepath.Join(v15, "initdb"),
			PgCtl:    filepath.Join(v15, "pg_ctl"),
			Postgres: filepath.Join(v15, "postgres"),
		}, b)
		assert.Equal(t, v15, b.Dir())
	})

	t.Run("a complete PATH directory wins over the version tree", func(t *testing.T) {
		b, err := FindBinaries(strings.Join([]string{partial, onPath}, string(os.PathListSeparator)), root)
		require.NoError(t, err)
		assert.Equal(t, onPath, b.Dir())
	})

	t.Run("all three programs come from one directory", func(t *testing.T) {
		// partial has initdb, onlyRest has the other two: together they are
		// complete, but a mixed pair of versions must not be assembled.
		onlyRest := fakeInstall(t, filepath.Join(tmp, "path-rest"), "pg_ctl", "postgres")
		_, err := FindBinaries(strings.Join([]string{partial, onlyRest}, string(os.PathListSeparator)))
		var nf *NotFoundError
		require.ErrorAs(t, err, &nf)
		assert.Equal(t, []string{partial, onlyRest}, nf.Searched)
	})

	t.Run("symlinks to the programs count", func(t *testing.T) {
		links := filepath.Join(tmp, "path-links")
		require.NoError(t, os.MkdirAll(links, 0o755))
		for _, p := range allPrograms() {
			require.NoError(t, os.Symlink(filepath.Join(v15, p), filepath.Join(links, p)))
		}
		b, err := FindBinaries(links)
		require.NoError(t, err)
		assert.Equal(t, links, b.Dir())
	})

	t.Run("relative and empty PATH entries are never searched", func(t *testing.T) {
		t.Chdir(onPath) // "." and "" would find a complete set here
		_, err := FindBinaries(strings.Join([]string{".", "", "path-full"}, string(os.PathListSeparator)))
		var nf *NotFoundError
		require.ErrorAs(t, err, &nf)
		assert.Empty(t, nf.Searched)
	})

	t.Run("nothing found says where it looked and how to install", func(t *testing.T) {
		_, err := FindBinaries(empty, filepath.Join(tmp, "no-such-root"))
		var nf *NotFoundError
		require.True(t, errors.As(err, &nf))
		assert.Equal(t, []string{empty}, nf.Searched)
		assert.Contains(t, err.Error(), "apt-get install -y postgresql")
		assert.Contains(t, err.Error(), "/usr/lib/postgresql/*/bin")
	})
}
