package landing

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// faultyCommit fails the rename of a record into place (not the temporary
// write before it), having made it first when made is set: a network
// share whose reply was lost. With statFails set a Stat of that record
// fails too, so the outcome cannot be checked. It also records whether the
// rename's context had ended when the rename was called.
type faultyCommit struct {
	Volume
	made, statFails bool
	callerEnded     func() // called as the rename starts: the caller gives up then
	ctxDoneAtRename bool
}

func isRecord(name string) bool {
	return path.Base(path.Dir(name)) == "records" && !strings.HasPrefix(path.Base(name), ".")
}

func (v *faultyCommit) Rename(ctx context.Context, oldname, newname string) error {
	if !isRecord(newname) {
		return v.Volume.Rename(ctx, oldname, newname)
	}
	if v.callerEnded != nil {
		v.callerEnded()
		v.ctxDoneAtRename = ctx.Err() != nil
		return v.Volume.Rename(ctx, oldname, newname)
	}
	if v.made {
		if err := v.Volume.Rename(ctx, oldname, newname); err != nil {
			return err
		}
	}
	return &fs.PathError{Op: "rename", Path: newname, Err: syscall.EIO}
}

func (v *faultyCommit) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if v.statFails && isRecord(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: syscall.EIO}
	}
	return v.Volume.Stat(ctx, name)
}

func TestACallerThatEndsDuringTheCommitDoesNotCutItShort(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	v := &faultyCommit{Volume: DirVolume(t.TempDir()), callerEnded: cancel}
	l := newLanding(t, v, Options{})
	rec, err := l.Land(ctx, "Crm", "1.0.0", testkit.ModuleArchive(t, "Crm", "1.0.0", 1))
	require.NoError(t, err, "the commit had started: the landing reports it done")
	assert.False(t, v.ctxDoneAtRename, "the rename runs on the commit's own context")
	act, err := l.Activation(t.Context())
	require.NoError(t, err)
	require.Len(t, act.Modules, 1)
	assert.Equal(t, rec.ID, act.Modules[0].ID)

	t.Run("control: a caller that ended before the commit point lands nothing", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		l := newLanding(t, DirVolume(t.TempDir()), Options{})
		_, err := l.Land(ctx, "Crm", "1.0.0", testkit.ModuleArchive(t, "Crm", "1.0.0", 1))
		require.ErrorIs(t, err, context.Canceled)
		act, err := l.Activation(t.Context())
		require.NoError(t, err)
		assert.Empty(t, act.Modules)
	})
}

func TestACommitThatReportsAFailureButTookPlaceIsALanding(t *testing.T) {
	l := newLanding(t, &faultyCommit{Volume: DirVolume(t.TempDir()), made: true}, Options{})
	_, created, err := landBytes(t.Context(), l, "Crm", "1.0.0", testkit.ModuleArchive(t, "Crm", "1.0.0", 1))
	require.NoError(t, err, "the record is in place: the landing happened")
	assert.True(t, created)
	act, err := l.Activation(t.Context())
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"Crm": "1.0.0"}, servedVersions(act))

	t.Run("control: a rename that did not take place is a failure and releases the version", func(t *testing.T) {
		root := t.TempDir()
		l := newLanding(t, &faultyCommit{Volume: DirVolume(root)}, Options{})
		_, err := l.Land(t.Context(), "Crm", "1.0.0", testkit.ModuleArchive(t, "Crm", "1.0.0", 1))
		require.ErrorIs(t, err, syscall.EIO)
		var unknown *CommitUnknownError
		assert.False(t, errors.As(err, &unknown), "its outcome is known")
		act, err := l.Activation(t.Context())
		require.NoError(t, err)
		assert.Empty(t, act.Modules)
		_, err = newLanding(t, DirVolume(root), Options{}).Land(t.Context(), "Crm", "1.0.0", testkit.ModuleArchive(t, "Crm", "1.0.0", 2))
		assert.NoError(t, err, "other bytes may take the version: nothing holds it")
	})
}

func TestACommitWhoseOutcomeCannotBeCheckedIsReportedUnknownAndKeepsItsClaim(t *testing.T) {
	root := t.TempDir()
	l := newLanding(t, &faultyCommit{Volume: DirVolume(root), made: true, statFails: true}, Options{})
	first := testkit.ModuleArchive(t, "Crm", "1.0.0", 1)
	_, err := l.Land(t.Context(), "Crm", "1.0.0", first)
	var unknown *CommitUnknownError
	require.ErrorAs(t, err, &unknown)
	assert.ErrorIs(t, err, syscall.EIO)
	assert.Contains(t, err.Error(), "may be served")
	act, err := l.Activation(t.Context())
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"Crm": "1.0.0"}, servedVersions(act), "it did land: the report did not deny it")
	// The claim stayed with the record: other bytes are refused, the same
	// bytes answer the version's record.
	plain := newLanding(t, DirVolume(root), Options{})
	_, err = plain.Land(t.Context(), "Crm", "1.0.0", testkit.ModuleArchive(t, "Crm", "1.0.0", 2))
	var conflict *VersionConflictError
	require.ErrorAs(t, err, &conflict)
	rec, created, err := landBytes(t.Context(), plain, "Crm", "1.0.0", first)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, act.Modules[0].ID, rec.ID)
}

func landBytes(ctx context.Context, l *ModuleLanding, module, version string, archive []byte) (Record, bool, error) {
	return l.LandArchive(ctx, module, version, bytes.NewReader(archive), int64(len(archive)))
}
