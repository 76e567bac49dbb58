package landing

import (
	"fmt"
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

func TestReconcilingReadsOnlyTheRecordFilesOfModulesThatChangedAndAgreesWithAFullScan(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		_, handle := k.open(t)
		counted, cv := counting(handle())
		b := newLanding(t, counted, Options{Replica: "b"})
		a := newLanding(t, handle(), Options{Replica: "a"}) // the other replica: its writes are not counted
		const n = 40
		for i := range n {
			m := fmt.Sprintf("Mod%02d", i)
			_, err := a.Land(ctx, m, "1.0.0", testkit.ModuleArchive(t, m, "1.0.0", 1))
			require.NoError(t, err)
		}
		prev, err := b.Activation(ctx)
		require.NoError(t, err)
		require.Len(t, prev.Modules, n)

		// Another replica changes four modules in every way a record can:
		// a new version, a shelving, an uninstall, and a newer record that
		// cannot be read (served from the one before it), then adds one.
		_, err = a.Land(ctx, "Mod01", "2.0.0", testkit.ModuleArchive(t, "Mod01", "2.0.0", 1))
		require.NoError(t, err)
		_, err = a.Shelve(ctx, "Mod01", "1.0.0")
		require.NoError(t, err)
		_, err = a.Uninstall(ctx, "Mod02")
		require.NoError(t, err)
		_, err = a.Land(ctx, "Mod03", "3.0.0", testkit.ModuleArchive(t, "Mod03", "3.0.0", 1))
		require.NoError(t, err)
		stamp, _ := a.stamp()
		corrupt := newRecordIDFromStamp(99, stamp) // newer than Mod04's records
		require.NoError(t, handle().WriteFile(ctx, path.Join(recordsDir("mod04"), corrupt+recordSuffix), []byte("{not json")))
		_, err = a.Land(ctx, "Mod40", "1.0.0", testkit.ModuleArchive(t, "Mod40", "1.0.0", 1))
		require.NoError(t, err)

		before := cv.Ops()
		got, err := b.Reconcile(ctx, prev)
		require.NoError(t, err)
		cost := cv.Ops().Sub(before)
		full, err := b.Activation(ctx)
		require.NoError(t, err)

		assert.Equal(t, full, got, "reconciliation answers what a full scan answers")
		assert.Equal(t, "1.0.0", servedVersions(got)["Mod01"])
		assert.NotContains(t, servedVersions(got), "Mod02")
		assert.Equal(t, "3.0.0", servedVersions(got)["Mod03"])
		assert.Equal(t, "1.0.0", servedVersions(got)["Mod04"], "served from the record before the unreadable one")
		require.Len(t, got.Unreadable, 1)
		assert.Equal(t, int64(n+2), cost.ReadDir, "the modules directory and one listing per module")
		// Mod01, Mod02, Mod03 and Mod40 read their newest record; Mod04 its
		// unreadable one and the one before.
		assert.Equal(t, int64(6), cost.ReadFile, "only the changed modules' record files are read")

		// Negative control: from nothing, every module's record file is read.
		before = cv.Ops()
		_, err = b.Reconcile(ctx, Activation{})
		require.NoError(t, err)
		assert.Equal(t, int64(n+2), cv.Ops().Sub(before).ReadFile)
	})
}

// prev may be a value the caller patched (the registry patches its
// snapshot with records it wrote or re-read): a module whose newest record
// is the one prev holds keeps it, whoever put it there.
func TestReconcilingTrustsARecordOnlyWhenItIsTheNewestOnTheVolume(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		counted, cv := counting(k.openVolume(t))
		l := newLanding(t, counted, Options{})
		rec, err := l.Land(ctx, "Alpha", "1.0.0", testkit.ModuleArchive(t, "Alpha", "1.0.0", 1))
		require.NoError(t, err)
		// A stale value for Alpha (its ID is not the newest's), and an
		// invented module with no records: neither may survive.
		stale := rec
		stale.ID, stale.Version = "00000000000000000001-00", "0.0.1"
		ghost := rec
		ghost.Module, ghost.ID = "Ghost", rec.ID
		got, err := l.Reconcile(ctx, Activation{Modules: []Record{stale, ghost}})
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"Alpha": "1.0.0"}, servedVersions(got))

		before := cv.Ops()
		again, err := l.Reconcile(ctx, got)
		require.NoError(t, err)
		assert.Equal(t, got, again)
		assert.Zero(t, cv.Ops().Sub(before).ReadFile, "the record held is the newest: nothing to read")
	})
}
