//go:build unix

package landing

import (
	"io"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// A DirVolume reads only regular files: a named pipe put where a record
// belongs is refused at once, not waited on (an open of a pipe waits for a
// writer, beyond any context), and the landing serves the older record. A
// directory is refused too, and so is a pipe where a directory belongs; a
// pipe where a journal entry belongs is an unreadable entry.
// Negative control (run): with a plain open, ReadFile of the pipe is still
// waiting at the bound (and ReadDir of it, through fs.ReadDir).
func TestADirVolumeRefusesToReadAPipeOrADirectoryWithoutWaitingOnIt(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	v := DirVolume(root)
	t.Cleanup(func() { _ = v.(io.Closer).Close() })
	l := newLanding(t, v, Options{})
	_, err := l.Land(ctx, "Rec", "1.0.0", testkit.ModuleArchive(t, "Rec", "1.0.0", 1))
	require.NoError(t, err)
	latest, err := l.Land(ctx, "Rec", "2.0.0", testkit.ModuleArchive(t, "Rec", "2.0.0", 1))
	require.NoError(t, err)
	recordFile := path.Join("modules", "rec", "records", latest.ID+recordSuffix)
	require.NoError(t, os.Remove(filepath.Join(root, recordFile)))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, recordFile), 0o644))

	ops := map[string]func() error{
		"ReadFile of a pipe":      func() error { _, err := v.ReadFile(ctx, recordFile, MaxRecordBytes); return err },
		"Open of a pipe":          func() error { _, err := v.Open(ctx, recordFile); return err },
		"ReadFile of a directory": func() error { _, err := v.ReadFile(ctx, "modules", MaxRecordBytes); return err },
		"Open of a directory":     func() error { _, err := v.Open(ctx, "modules"); return err },
		"ReadDir of a pipe":       func() error { _, err := v.ReadDir(ctx, recordFile); return err },
	}
	for name, op := range ops {
		done := make(chan error, 1)
		go func() { done <- op() }()
		err := testkit.Receive(t, done, name)
		if name == "ReadDir of a pipe" {
			assert.ErrorIs(t, err, syscall.ENOTDIR, name)
			continue
		}
		assert.ErrorIs(t, err, errNotRegular, name)
	}

	done := make(chan Activation, 1)
	go func() {
		act, err := l.Activation(ctx)
		assert.NoError(t, err)
		done <- act
	}()
	act := testkit.Receive(t, done, "the activation")
	assert.Equal(t, "1.0.0", servedVersions(act)["Rec"], "served from the older record")
	assert.Len(t, act.Unreadable, 1)

	// A pipe where a journal entry belongs is an unreadable entry: the
	// journal moves past it.
	entry := filepath.Join(root, journalEntryDir(2), journalEntry)
	require.NoError(t, os.Remove(entry))
	require.NoError(t, syscall.Mkfifo(entry, 0o644))
	read := make(chan []JournalEntry, 1)
	go func() {
		entries, _, err := l.ReadJournal(ctx, 1, 10)
		assert.NoError(t, err)
		read <- entries
	}()
	entries := testkit.Receive(t, read, "the journal read")
	if assert.Len(t, entries, 2) {
		assert.Equal(t, "Rec", entries[0].Module)
		assert.Empty(t, entries[1].Module, "the pipe is an unreadable entry")
	}
}
