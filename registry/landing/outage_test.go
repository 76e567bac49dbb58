package landing

import (
	"context"
	"fmt"
	"path"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// recordOutage is a volume whose reads of one file fail as a passing
// outage does (a 503 from the store, a call that did not answer): the
// next read of the same file may well succeed.
type recordOutage struct {
	Volume
	down atomic.Pointer[string] // the file whose reads fail
}

func (v *recordOutage) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	if p := v.down.Load(); p != nil && *p == name {
		return nil, fmt.Errorf("GetObject %s: 503 Slow Down: %w", name, ErrUnavailable)
	}
	return v.Volume.ReadFile(ctx, name, max)
}

// A record that cannot be read because the volume is unavailable is not
// passed over for the older record beneath it: the newest may end the
// module (an uninstall) or replace its version, and serving the older one
// would serve what was uninstalled, on one replica, for as long as the
// outage lasts. The read fails as unavailable instead (the registry's 503,
// its snapshot kept), on the first derivation and on a journal pass alike,
// and once the volume answers the newest record serves. Negative control
// (run): with latestOf passing an outage over as a bad record, both reads
// succeed and serve the uninstalled module at 1.0.0.
func TestAnOutageReadingTheNewestRecordFailsTheReadInsteadOfServingTheOlderOne(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		v, replica := k.open(t)
		writer := newLanding(t, v, Options{Replica: "writer"})
		_, err := writer.Land(ctx, "Gone", "1.0.0", testkit.ModuleArchive(t, "Gone", "1.0.0", 1))
		require.NoError(t, err)
		_, err = writer.Land(ctx, "Kept", "1.0.0", testkit.ModuleArchive(t, "Kept", "1.0.0", 1))
		require.NoError(t, err)

		ov := &recordOutage{Volume: replica()}
		reader := newLanding(t, keepExclusive(ov, ov.Volume), Options{Replica: "reader"})
		before, err := reader.ReconcileChanges(ctx, Activation{})
		require.NoError(t, err)
		require.Equal(t, "1.0.0", servedVersions(before)["Gone"], "control: served before the uninstall")

		gone, err := writer.Uninstall(ctx, "Gone")
		require.NoError(t, err)
		newest := path.Join(recordsDir(moduleKey("Gone")), gone.ID+recordSuffix)
		ov.down.Store(&newest)

		_, err = reader.ReconcileChanges(ctx, before)
		assert.True(t, IsUnavailable(err), "a journal pass: %v", err)
		_, err = reader.Activation(ctx)
		assert.True(t, IsUnavailable(err), "a first derivation: %v", err)

		ov.down.Store(nil)
		after, err := reader.ReconcileChanges(ctx, before)
		require.NoError(t, err)
		assert.NotContains(t, servedVersions(after), "Gone", "the uninstall serves once the volume answers")
		assert.Equal(t, "1.0.0", servedVersions(after)["Kept"])
		assert.Empty(t, after.Unreadable)
	})
}
