package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/registry/landing"
)

func TestASlowVolumeOperationDoesNotStartOnceItsContextIsDone(t *testing.T) {
	root := t.TempDir()
	done, cancel := context.WithCancel(t.Context())
	cancel()
	// A round trip of an hour would hold the test for an hour if the
	// context were not honoured: the bound is the test's negative control.
	err := newSlowVolume(landing.DirVolume(root), time.Hour).WriteFile(done, "x", []byte("x"))
	assert.ErrorIs(t, err, context.Canceled)
	_, err = os.Stat(filepath.Join(root, "x"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "nothing written")
	require.NoError(t, newSlowVolume(landing.DirVolume(root), time.Nanosecond).WriteFile(t.Context(), "x", []byte("x")),
		"control: with a live context the write happens")
}
