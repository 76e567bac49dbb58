package landing

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// failingRead is a volume whose reads of one file fail with err, as a
// passing outage or a refusal does: the next read may well succeed.
type failingRead struct {
	Volume
	file atomic.Pointer[string] // the file whose reads fail
	err  error
}

func (v *failingRead) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	if p := v.file.Load(); p != nil && *p == name {
		return nil, &fs.PathError{Op: "read", Path: name, Err: v.err}
	}
	return v.Volume.ReadFile(ctx, name, max)
}

// A record whose read fails for any reason but its being no record of
// this build (an outage, a refused credential, a disk error) is not passed
// over for the older record beneath it: the newest may end the module (an
// uninstall) or replace its version, and serving the older one would serve
// what was uninstalled, on one replica, for as long as the failure lasts.
// The read fails instead (an outage as unavailable: the registry's 503),
// its snapshot kept, on the first derivation and on a journal pass alike,
// and once the volume answers the newest record serves. A file that is no
// record (too large, garbage) is still passed over:
// TestAnUnreadableRecordIsReportedAndTheOlderOneServes. Negative control
// (run): with latestOf passing every failure but the caller's end over as
// a bad record, the journal pass of every row, on both volumes, serves the
// uninstalled module at 1.0.0.
func TestAFailedReadOfTheNewestRecordFailsTheReadInsteadOfServingTheOlderOne(t *testing.T) {
	for _, c := range []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"an outage", fmt.Errorf("GetObject: 503 Slow Down: %w", ErrUnavailable), true},
		{"a refusal", fmt.Errorf("GetObject: 403 ExpiredToken: %w", fs.ErrPermission), false},
		{"an error of an unknown kind", errors.New("input/output error"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachVolume(t, func(t *testing.T, k volumeKind) {
				ctx := t.Context()
				v, replica := k.open(t)
				writer := newLanding(t, v, Options{Replica: "writer"})
				_, err := writer.Land(ctx, "Gone", "1.0.0", testkit.ModuleArchive(t, "Gone", "1.0.0", 1))
				require.NoError(t, err)
				_, err = writer.Land(ctx, "Kept", "1.0.0", testkit.ModuleArchive(t, "Kept", "1.0.0", 1))
				require.NoError(t, err)

				fv := &failingRead{Volume: replica(), err: c.err}
				reader := newLanding(t, keepExclusive(fv, fv.Volume), Options{Replica: "reader"})
				before, err := reader.ReconcileChanges(ctx, Activation{})
				require.NoError(t, err)
				require.Equal(t, "1.0.0", servedVersions(before)["Gone"], "control: served before the uninstall")

				gone, err := writer.Uninstall(ctx, "Gone")
				require.NoError(t, err)
				newest := path.Join(recordsDir(moduleKey("Gone")), gone.ID+recordSuffix)
				fv.file.Store(&newest)

				pass, err := reader.ReconcileChanges(ctx, before)
				require.Error(t, err, "a journal pass serves %v", servedVersions(pass))
				assert.Equal(t, c.unavailable, IsUnavailable(err), "%v", err)
				assert.ErrorContains(t, err, newest, "the error names the record")
				first, err := reader.Activation(ctx)
				require.Error(t, err, "a first derivation serves %v", servedVersions(first))
				assert.Equal(t, c.unavailable, IsUnavailable(err), "%v", err)
				_, _, err = reader.OpenBundle(ctx, "Gone", "1.0.0")
				require.Error(t, err)
				var notFound *NotFoundError
				assert.False(t, errors.As(err, &notFound), "the download's read fails; it does not find the older record: %v", err)

				fv.file.Store(nil)
				after, err := reader.ReconcileChanges(ctx, before)
				require.NoError(t, err)
				assert.NotContains(t, servedVersions(after), "Gone", "the uninstall serves once the volume answers")
				assert.Equal(t, "1.0.0", servedVersions(after)["Kept"])
				assert.Empty(t, after.Unreadable)
			})
		})
	}
}
