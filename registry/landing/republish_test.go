package landing

import (
	"bytes"
	"context"
	"testing"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPublishingAnUninstalledVersionAgainServesItOnEveryReplica: a version
// landed on one replica and uninstalled on another, then published again
// with the same bytes, is written anew (created) and served by both, as
// after a removal. Negative control: before the fix the landing answered
// the old Landed record (created false) and wrote nothing, so the
// publication succeeded ("already published", State landed) while no
// replica served the module.
func TestPublishingAnUninstalledVersionAgainServesItOnEveryReplica(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := context.Background()
		va, replica := k.open(t)
		a := newLanding(t, va, Options{Replica: "a"})
		b := newLanding(t, replica(), Options{Replica: "b"})
		archive := testkit.ModuleArchive(t, "Again", "1.0.0", 2)
		first, err := a.Land(ctx, "Again", "1.0.0", archive)
		require.NoError(t, err)
		_, err = b.Uninstall(ctx, "Again")
		require.NoError(t, err)

		rec, created, err := a.LandArchive(ctx, "Again", "1.0.0", bytes.NewReader(archive), int64(len(archive)))
		require.NoError(t, err)
		assert.True(t, created, "a new record is written")
		assert.Greater(t, rec.ID, first.ID)
		for name, l := range map[string]*ModuleLanding{"a": a, "b": b} {
			act, err := l.Activation(ctx)
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"Again": "1.0.0"}, servedVersions(act), "replica %s serves what it answered", name)
		}

		// Published again while served: nothing written.
		again, created, err := b.LandArchive(ctx, "Again", "1.0.0", bytes.NewReader(archive), int64(len(archive)))
		require.NoError(t, err)
		assert.False(t, created)
		assert.Equal(t, rec.ID, again.ID)
	})
}
