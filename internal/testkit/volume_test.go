package testkit

import (
	"testing"

	"github.com/meshrx/meshrx/registry/landing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCountingVolumeCountsEveryOperationOnce(t *testing.T) {
	ctx := t.Context()
	cv := CountingVolume(landing.DirVolume(t.TempDir()))
	require.NoError(t, cv.MkdirAll(ctx, "d"))
	require.NoError(t, cv.WriteFile(ctx, "d/f", []byte("f")))
	require.NoError(t, cv.Rename(ctx, "d/f", "d/g"))
	_, err := cv.ReadDir(ctx, "d")
	require.NoError(t, err)
	_, err = cv.ReadFile(ctx, "d/g", 1)
	require.NoError(t, err)
	_, err = cv.ReadFile(ctx, "d/missing", 1)
	require.Error(t, err, "a failed operation is still a round trip")
	_, err = cv.Stat(ctx, "d/g")
	require.NoError(t, err)
	rc, err := cv.Open(ctx, "d/g")
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.NoError(t, cv.RemoveAll(ctx, "d"))
	assert.Equal(t, OpCounts{MkdirAll: 1, WriteFile: 1, Rename: 1, ReadDir: 1, ReadFile: 2, Stat: 1, RemoveAll: 1, Open: 1}, cv.Ops())
	assert.Equal(t, int64(9), cv.Ops().Total())
}
