package landing

import (
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
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

// sameActivation asserts that got lists what want lists: the modules
// served, the modules ended and the unreadable records.
func sameActivation(t *testing.T, want, got Activation) {
	t.Helper()
	assert.Equal(t, want.Modules, got.Modules, "served modules")
	assert.Equal(t, want.Ended, got.Ended, "ended modules")
	assert.Equal(t, want.Unreadable, got.Unreadable, "unreadable records")
}

// A reconciliation pass by the journal reads the journal's head, its
// entries since the last pass and the modules they name: O(changed), on
// every volume, and answers what a full walk answers. Negative control:
// the full walk (Reconcile) from the same activation lists every module.
func TestReconcilingByTheJournalReadsOnlyTheModulesWrittenSinceTheLastPassAndAgreesWithAFullWalk(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		_, handle := k.open(t)
		counted, cv := counting(handle())
		b := newLanding(t, counted, Options{Replica: "b"})
		a := newLanding(t, handle(), Options{Replica: "a"})
		const n = 30
		for i := range n {
			m := fmt.Sprintf("Mod%02d", i)
			_, err := a.Land(ctx, m, "1.0.0", testkit.ModuleArchive(t, m, "1.0.0", 1))
			require.NoError(t, err)
		}
		first, err := b.ReconcileChanges(ctx, Activation{}) // the first pass walks
		require.NoError(t, err)
		require.Len(t, first.Modules, n)
		require.NotZero(t, first.JournalFrom())
		settled, err := b.ReconcileChanges(ctx, first) // reads the walk's backlog
		require.NoError(t, err)
		sameActivation(t, first, settled)
		assert.Equal(t, uint64(n+1), settled.JournalFrom(), "past the last entry")

		before := cv.Ops()
		idle, err := b.ReconcileChanges(ctx, settled)
		require.NoError(t, err)
		cost := cv.Ops().Sub(before)
		sameActivation(t, settled, idle)
		assert.Equal(t, int64(2), cost.ReadDir, "nothing written: the journal's head (two listings)")
		assert.Equal(t, int64(1), cost.ReadFile, "nothing written: one read finds the journal's end")

		// Another replica writes five records on three modules and adds one.
		_, err = a.Land(ctx, "Mod01", "2.0.0", testkit.ModuleArchive(t, "Mod01", "2.0.0", 1))
		require.NoError(t, err)
		_, err = a.Shelve(ctx, "Mod01", "1.0.0")
		require.NoError(t, err)
		_, err = a.Uninstall(ctx, "Mod02")
		require.NoError(t, err)
		_, err = a.Land(ctx, "Mod03", "3.0.0", testkit.ModuleArchive(t, "Mod03", "3.0.0", 1))
		require.NoError(t, err)
		_, err = a.Land(ctx, "Mod40", "1.0.0", testkit.ModuleArchive(t, "Mod40", "1.0.0", 1))
		require.NoError(t, err)

		before = cv.Ops()
		got, err := b.ReconcileChanges(ctx, idle)
		require.NoError(t, err)
		cost = cv.Ops().Sub(before)
		full, err := b.Activation(ctx)
		require.NoError(t, err)
		sameActivation(t, full, got)
		assert.Equal(t, "1.0.0", servedVersions(got)["Mod01"])
		assert.NotContains(t, servedVersions(got), "Mod02")
		assert.Equal(t, "3.0.0", servedVersions(got)["Mod03"])
		assert.Equal(t, "1.0.0", servedVersions(got)["Mod40"])
		const entries, modules = 5, 4
		assert.Equal(t, int64(2+modules), cost.ReadDir, "the head and one listing per module written")
		assert.Equal(t, int64(entries+1+modules), cost.ReadFile, "each entry, the journal's end, each module's newest record")
		assert.Less(t, cost.Total(), int64(n), "fewer operations than there are modules")

		// Negative control: the full walk from the same activation lists
		// every module.
		before = cv.Ops()
		_, err = b.Reconcile(ctx, idle)
		require.NoError(t, err)
		assert.Equal(t, int64(1+n+1), cv.Ops().Sub(before).ReadDir)
	})
}

// On the object store, the requests a pass sends (counted by the server,
// as they arrive) grow with the modules written since the last pass, not
// with the modules there are. Negative control: the full walk sends more
// than the bound (one listing per module).
func TestAReconciliationPassOnAnObjectStoreSendsRequestsPerChangeNotPerModule(t *testing.T) {
	ctx := t.Context()
	srv := s3test.Start(t)
	a := newLanding(t, s3Volume(t, srv, s3volume.Options{Prefix: "r"}), Options{Replica: "a"})
	b := newLanding(t, s3Volume(t, srv, s3volume.Options{Prefix: "r"}), Options{Replica: "b"})
	const n, changed = 120, 3
	for i := range n {
		m := fmt.Sprintf("Mod%03d", i)
		_, err := a.Land(ctx, m, "1.0.0", testkit.ModuleArchive(t, m, "1.0.0", 1))
		require.NoError(t, err)
	}
	act, err := b.ReconcileChanges(ctx, Activation{})
	require.NoError(t, err)
	act, err = b.ReconcileChanges(ctx, act)
	require.NoError(t, err)
	for i := range changed {
		m := fmt.Sprintf("Mod%03d", i*7)
		_, err := a.Land(ctx, m, "2.0.0", testkit.ModuleArchive(t, m, "2.0.0", 1))
		require.NoError(t, err)
	}

	// The head (a listing of the segments and one of the last segment),
	// one GetObject per entry and one 404 for the end, then per module a
	// listing of its records and a GetObject of the newest.
	const bound = 2 + changed + 1 + 2*changed
	before := srv.Requests()
	got, err := b.ReconcileChanges(ctx, act)
	require.NoError(t, err)
	requests := srv.Requests() - before
	assert.LessOrEqual(t, requests, bound, "requests of a pass with %d of %d modules changed", changed, n)
	full, err := b.Activation(ctx)
	require.NoError(t, err)
	sameActivation(t, full, got)
	for i := range changed {
		assert.Equal(t, "2.0.0", servedVersions(got)[fmt.Sprintf("Mod%03d", i*7)])
	}

	// Negative control: the full walk from the same activation.
	before = srv.Requests()
	_, err = b.Reconcile(ctx, act)
	require.NoError(t, err)
	walk := srv.Requests() - before
	assert.Greater(t, walk, bound)
	assert.GreaterOrEqual(t, walk, n+1, "one listing per module and one of the modules")
	t.Logf("%d modules, %d changed: a pass by the journal sent %d requests (bound %d), the full walk %d", n, changed, requests, bound, walk)
}

// A gap in the journal (the entry to read next is gone while later ones
// exist, as after a trim) cannot vouch for the previous activation: the
// pass walks every module. Negative control: the same pass without the
// gap reads only the journal.
func TestAReconciliationPassThatMeetsAGapInTheJournalWalksEveryModule(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		_, handle := k.open(t)
		counted, cv := counting(handle())
		b := newLanding(t, counted, Options{Replica: "b"})
		a := newLanding(t, handle(), Options{Replica: "a"})
		const n = 6
		for i := range n {
			m := fmt.Sprintf("Mod%02d", i)
			_, err := a.Land(ctx, m, "1.0.0", testkit.ModuleArchive(t, m, "1.0.0", 1))
			require.NoError(t, err)
		}
		act, err := b.ReconcileChanges(ctx, Activation{})
		require.NoError(t, err)
		act, err = b.ReconcileChanges(ctx, act)
		require.NoError(t, err)
		_, err = a.Land(ctx, "Mod01", "2.0.0", testkit.ModuleArchive(t, "Mod01", "2.0.0", 1))
		require.NoError(t, err)
		_, err = a.Land(ctx, "Mod02", "2.0.0", testkit.ModuleArchive(t, "Mod02", "2.0.0", 1))
		require.NoError(t, err)

		before := cv.Ops()
		_, err = b.ReconcileChanges(ctx, act)
		require.NoError(t, err)
		assert.Equal(t, int64(2+2), cv.Ops().Sub(before).ReadDir, "control: the head and the two modules")

		require.NoError(t, handle().RemoveAll(ctx, journalEntryDir(act.JournalFrom())))
		before = cv.Ops()
		got, err := b.ReconcileChanges(ctx, act)
		require.NoError(t, err)
		assert.Equal(t, int64(2+1+n), cv.Ops().Sub(before).ReadDir, "the head, the modules and every module's records")
		assert.Equal(t, "2.0.0", servedVersions(got)["Mod02"], "the write after the gap is served")
	})
}

// An entry is claimed before its record's commit: a pass that reads the
// entry while the commit runs finds no record, and the next pass reads
// from that entry again, so the record is served once it is committed.
// Negative control: once twice CommitBudget has passed since the entry was
// first found uncommitted, the pass moves past it and a record that
// appears later is not read.
func TestAJournalEntryWhoseRecordIsNotYetCommittedIsReadAgainByTheNextPass(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		_, handle := k.open(t)
		clk := clock.NewMock()
		clk.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		a := newLanding(t, handle(), Options{Replica: "a", Clock: clk})
		b := newLanding(t, handle(), Options{Replica: "b", Clock: clk})
		for _, m := range []string{"Alpha", "Beta"} {
			_, err := a.Land(ctx, m, "1.0.0", testkit.ModuleArchive(t, m, "1.0.0", 1))
			require.NoError(t, err)
		}
		act, err := b.ReconcileChanges(ctx, Activation{})
		require.NoError(t, err)
		act, err = b.ReconcileChanges(ctx, act)
		require.NoError(t, err)

		// A write whose entry is claimed and whose commit has not run: the
		// uninstall of module, as writeRecord would write it.
		pending := func(module string) (commit func()) {
			ids, err := a.scan.recordIDs(ctx, moduleKey(module))
			require.NoError(t, err)
			stamp, at := a.stamp()
			rec := Record{Module: module, State: Uninstalled, RecordedAt: at, Replica: "a",
				ID: newRecordIDFromStamp(nextSeq(ids), stamp)}
			_, err = a.journal(ctx, JournalEntry{Module: module, Record: rec.ID, Replica: "a"})
			require.NoError(t, err)
			return func() {
				data, err := encodeRecord(rec)
				require.NoError(t, err)
				require.NoError(t, handle().MkdirAll(ctx, recordsDir(moduleKey(module))))
				require.NoError(t, handle().WriteFile(ctx, path.Join(recordsDir(moduleKey(module)), rec.ID+recordSuffix), data))
			}
		}

		commit := pending("Alpha")
		mark := act.JournalFrom()
		act, err = b.ReconcileChanges(ctx, act)
		require.NoError(t, err)
		assert.Contains(t, servedVersions(act), "Alpha", "not committed yet")
		assert.Equal(t, mark, act.JournalFrom(), "the next pass reads the entry again")
		clk.Add(CommitBudget)
		commit()
		act, err = b.ReconcileChanges(ctx, act)
		require.NoError(t, err)
		assert.NotContains(t, servedVersions(act), "Alpha", "the committed uninstall is served")
		assert.Equal(t, mark+1, act.JournalFrom())

		// Negative control: a commit that comes after the pass gave up on it.
		commit = pending("Beta")
		mark = act.JournalFrom()
		act, err = b.ReconcileChanges(ctx, act)
		require.NoError(t, err)
		require.Equal(t, mark, act.JournalFrom())
		clk.Add(2*CommitBudget + time.Second)
		act, err = b.ReconcileChanges(ctx, act)
		require.NoError(t, err)
		assert.Equal(t, mark+1, act.JournalFrom(), "passed over")
		commit()
		act, err = b.ReconcileChanges(ctx, act)
		require.NoError(t, err)
		assert.Contains(t, servedVersions(act), "Beta", "a record committed after its entry was given up is not read by the journal")
	})
}

// A record written without a journal entry (by an older build, or by
// hand) is seen within fullWalkEvery: passes that read the journal do not
// see it (the control, first), and the first pass after fullWalkEvery
// walks every module.
func TestARecordWithoutAJournalEntryIsServedAfterTheNextFullWalk(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		_, handle := k.open(t)
		clk := clock.NewMock()
		clk.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		a := newLanding(t, handle(), Options{Replica: "a", Clock: clk})
		b := newLanding(t, handle(), Options{Replica: "b", Clock: clk})
		_, err := a.Land(ctx, "Alpha", "1.0.0", testkit.ModuleArchive(t, "Alpha", "1.0.0", 1))
		require.NoError(t, err)
		act, err := b.ReconcileChanges(ctx, Activation{})
		require.NoError(t, err)
		act, err = b.ReconcileChanges(ctx, act)
		require.NoError(t, err)

		// The newest entry removed: the journal's head moves back with it,
		// so no pass meets a gap.
		_, err = a.Land(ctx, "Alpha", "2.0.0", testkit.ModuleArchive(t, "Alpha", "2.0.0", 1))
		require.NoError(t, err)
		require.NoError(t, handle().RemoveAll(ctx, journalEntryDir(act.JournalFrom())))
		act, err = b.ReconcileChanges(ctx, act)
		require.NoError(t, err)
		assert.Equal(t, "1.0.0", servedVersions(act)["Alpha"], "control: a pass that reads the journal does not see it")

		clk.Add(fullWalkEvery + time.Minute)
		act, err = b.ReconcileChanges(ctx, act)
		require.NoError(t, err)
		assert.Equal(t, "2.0.0", servedVersions(act)["Alpha"], "the full walk serves it")
	})
}
