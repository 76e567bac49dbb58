package registry

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/registry/landing/volumetest"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// newJournalServed is a ServedActivation on l that tails the volume's
// journal (the default) and, with m, announces and hears writes on it.
func newJournalServed(t *testing.T, l *landing.ModuleLanding, clk *rxtest.Clock, m mesh.Store) *ServedActivation {
	t.Helper()
	s := NewServedActivation(l, ServedOptions{Clock: clk, Changes: m, Logger: quietLogger()})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
		defer cancel()
		require.NoError(t, s.Close(ctx))
	})
	return s
}

// tailedNow waits until s has finished a journal tail that began at the
// clock's present: its next round is then armed a period ahead.
func tailedNow(t *testing.T, s *ServedActivation, clk *rxtest.Clock) {
	t.Helper()
	eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.lastTail.Equal(clk.Now())
	}, "a journal tail at the present")
}

// silentChanges is a mesh whose change nodes cannot be written while
// silent is set: announcements fail, as on a database that refuses them.
type silentChanges struct {
	mesh.Store
	silent atomic.Bool
}

var errSilenced = errors.New("the change feed refuses writes")

func (s *silentChanges) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	if s.silent.Load() && strings.HasPrefix(n.Path, DefaultChangesNamespace+"/") {
		return mesh.Node{}, errSilenced
	}
	return s.Store.Put(ctx, n)
}

// TestARecordWhoseAnnouncementNeverArrivesIsServedByEveryReplicaWithinFreshness:
// a failed announcement, and a commit whose writer died before announcing
// (a landing behind the service's back), are served by a replica with a
// live feed one journal period later. Negative control: a replica with the
// same live feed but no journal tail does not serve them then (it waits
// for its snapshot to be due).
func TestARecordWhoseAnnouncementNeverArrivesIsServedByEveryReplicaWithinFreshness(t *testing.T) {
	root := t.TempDir()
	la := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "a"})
	lb := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "b"})
	lc := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "c"})
	crashed := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "crashed"})
	land(t, la, "Seed", "1.0.0")
	m := newMem(t)
	silent := &silentChanges{Store: m}
	silent.silent.Store(true)
	clk := rxtest.NewClock()
	a := newJournalServed(t, la, clk, silent)
	b := newJournalServed(t, lb, clk, m)
	c := newFeedServed(t, lc, clk, m) // the control: feed, no journal tail
	for _, s := range []*ServedActivation{a, b, c} {
		read(t, s)
	}
	feedLive(t, b)
	feedLive(t, c)
	tailedNow(t, b, clk)

	land(t, a, "Unannounced", "1.0.0")   // its announcement fails
	land(t, crashed, "Crashed", "1.0.0") // committed, never announced
	assert.Equal(t, 1, a.Unannounced())
	assert.Positive(t, a.AnnounceFailures())

	clk.Advance(b.journalPeriod)
	tailedNow(t, b, clk)
	got := servedVersions(read(t, b).Activation())
	assert.Equal(t, "1.0.0", got["Unannounced"], "served one journal period (%s) later", b.journalPeriod)
	assert.Equal(t, "1.0.0", got["Crashed"])
	assert.LessOrEqual(t, b.journalPeriod, b.Freshness())

	gotC := servedVersions(read(t, c).Activation())
	assert.NotContains(t, gotC, "Unannounced", "control: the feed never carried it")
	assert.NotContains(t, gotC, "Crashed")
}

// TestARePublishAnsweredAlreadyPublishedIsServedByTheReplicaThatAnsweredIt:
// another replica landed the version and died before announcing it; a
// re-publish of the same bytes through this replica (created false) patches
// its snapshot and announces it. Negative control: before the re-publish,
// this replica (no journal tail here, to isolate the path) does not serve
// it, and neither does a third that hears the feed.
func TestARePublishAnsweredAlreadyPublishedIsServedByTheReplicaThatAnsweredIt(t *testing.T) {
	root := t.TempDir()
	dead := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "dead"})
	lb := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "b"})
	lc := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "c"})
	land(t, lb, "Seed", "1.0.0")
	m := newMem(t)
	clk := rxtest.NewClock()
	b := newFeedServed(t, lb, clk, m)
	c := newFeedServed(t, lc, clk, m)
	read(t, b)
	read(t, c)
	feedLive(t, c)

	archive := testkit.ModuleArchive(t, "Orphan", "1.0.0", 2)
	_, err := dead.Land(t.Context(), "Orphan", "1.0.0", archive)
	require.NoError(t, err)
	assert.NotContains(t, servedVersions(read(t, b).Activation()), "Orphan", "control: not served before the re-publish")
	assert.NotContains(t, servedVersions(read(t, c).Activation()), "Orphan")

	rec, created, err := b.LandArchive(t.Context(), "Orphan", "1.0.0", bytes.NewReader(archive), int64(len(archive)))
	require.NoError(t, err)
	require.False(t, created, "already published")
	assert.Equal(t, "1.0.0", servedVersions(read(t, b).Activation())["Orphan"], "the replica that answered serves it")
	eventually(t, func() bool { return servedVersions(read(t, c).Activation())["Orphan"] == "1.0.0" }, "c absorbing b's announcement")
	assert.EqualValues(t, 1, b.Derivations(), "patched, not re-derived")
	assert.Equal(t, rec.ID, read(t, b).Activation().Modules[0].ID)
}

// TestAReReadThatStartedBeforeAnUninstallDoesNotServeTheModuleAgain: replica
// b lands 2.0.0; a's re-read of the module (the feed named it) returns that
// landing, and a uninstalls the module before the re-read is patched in. The
// test stands where the absorber stands: it re-reads, lets the uninstall
// run, then patches. The snapshot's marker for the uninstall (its record,
// with its sequence) keeps the late re-read out. Negative control: the same
// patch over the served modules alone (no marker, as before) serves the
// module again.
func TestAReReadThatStartedBeforeAnUninstallDoesNotServeTheModuleAgain(t *testing.T) {
	root := t.TempDir()
	la := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "a"})
	lb := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "b"})
	land(t, la, "Gone", "1.0.0")
	clk := rxtest.NewClock()
	a := newFeedServed(t, la, clk, newMem(t))
	read(t, a)

	land(t, lb, "Gone", "2.0.0")
	late, ok := a.absorb("gone") // the re-read, in flight
	require.True(t, ok)
	require.Equal(t, "2.0.0", late.rec.Version)
	_, err := a.Uninstall(t.Context(), "Gone")
	require.NoError(t, err)
	before := read(t, a)
	require.NotContains(t, servedVersions(before.Activation()), "Gone")
	require.Len(t, before.rest.Ended, 1, "the snapshot keeps the uninstall's record")

	a.patchAll([]patch{late}) // the re-read lands after the uninstall
	assert.NotContains(t, servedVersions(read(t, a).Activation()), "Gone", "not served again")

	resurrected, _, _ := before.mods.patched(before.content, []patch{late})
	assert.Contains(t, servedVersions(landing.Activation{Modules: resurrected.flat()}), "Gone", "control: without the marker it comes back")
}

// TestReadyzNamesAnUnresolvedAnnouncementAndTheRetryResolvesIt: a failed
// announcement is counted, retried every journal period and, while it is
// unresolved, /readyz is 503 naming it. Negative control: readiness
// without that check says ready meanwhile.
func TestReadyzNamesAnUnresolvedAnnouncementAndTheRetryResolvesIt(t *testing.T) {
	silent := &silentChanges{Store: newMem(t)}
	f := newFixture(t, fixtureOptions{served: func(o *ServedOptions) {
		o.Changes, o.JournalPeriod = silent, 0
	}})
	silent.silent.Store(true)
	f.publish("Loud", "1.0.0", "")
	got := f.do(request{path: ReadyPath})
	require.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
	assert.Equal(t, []string{CheckAnnouncements}, notReadyChecks(readyAnswer(t, got)))
	assert.Empty(t, passingWithout(t, f, CheckAnnouncements), "control: ready without the check")
	assert.Equal(t, 1, f.served.Unannounced())
	failures := f.served.AnnounceFailures()
	assert.Positive(t, failures)

	// Still failing: retried each period, counted, still not ready.
	tailedNow(t, f.served, f.clk)
	f.clk.Advance(f.served.maintPeriod)
	tailedNow(t, f.served, f.clk)
	// The retry follows the tail in the same round.
	eventually(t, func() bool { return f.served.AnnounceFailures() > failures }, "the retry attempted and counted")

	silent.silent.Store(false)
	f.clk.Advance(f.served.maintPeriod)
	tailedNow(t, f.served, f.clk)
	eventually(t, func() bool { return f.served.Unannounced() == 0 }, "the retry succeeding")
	f.clk.Advance(ReadinessReuse)
	got = f.do(request{path: ReadyPath})
	assert.Equal(t, http.StatusOK, got.status, "%s", got.body)
}

// blindVolume makes the journal unreadable and the scan of the
// modules fail while on: this replica can learn of no other replica's write.
type blindVolume struct {
	failingScans
}

func (v *blindVolume) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	if v.on.Load() && strings.HasPrefix(name, "journal/") {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("input/output error")}
	}
	return v.Volume.ReadFile(ctx, name, max)
}

// TestReadyzWithTheFeedLiveFailsOnceTheReplicaMayHaveMissedRecordsForLongerThanFreshness:
// with the change feed live, neither the journal's tail nor a derivation
// succeeding, /readyz is not ready once Freshness has passed (it allowed
// 3 × Reconcile, 15 minutes, while the feed was live). Negative control:
// readiness without the snapshot check says ready then.
func TestReadyzWithTheFeedLiveFailsOnceTheReplicaMayHaveMissedRecordsForLongerThanFreshness(t *testing.T) {
	var blind *blindVolume
	f := newFixture(t, fixtureOptions{
		volume: func(v landing.Volume) landing.Volume {
			blind = &blindVolume{failingScans{Volume: v}}
			return blind
		},
		served: func(o *ServedOptions) { o.Changes, o.JournalPeriod = newMem(t), 0 },
	})
	feedLive(t, f.served)
	f.publish("A", "1.0.0", "")
	tailedNow(t, f.served, f.clk)
	got := f.do(request{path: ReadyPath})
	require.Equal(t, http.StatusOK, got.status, "%s", got.body)

	blind.on.Store(true)
	for elapsed := time.Duration(0); elapsed <= f.served.Freshness(); elapsed += f.served.journalPeriod {
		f.clk.Advance(f.served.journalPeriod)
		eventually(t, func() bool { return strings.Contains(f.served.tailState(), "failing") }, "the tail failing")
		settle(t, f.served)
	}
	f.clk.Advance(ReadinessReuse)
	got = f.do(request{path: ReadyPath})
	require.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
	assert.Equal(t, []string{CheckSnapshot}, notReadyChecks(readyAnswer(t, got)))
	assert.Less(t, f.clk.Elapsed(), 3*DefaultReconcile, "well inside what readiness allowed before")
	assert.Empty(t, passingWithout(t, f, CheckSnapshot), "control: ready without the check")

	blind.on.Store(false)
	f.clk.Advance(f.served.journalPeriod)
	tailedNow(t, f.served, f.clk)
	f.clk.Advance(ReadinessReuse)
	got = f.do(request{path: ReadyPath})
	assert.Equal(t, http.StatusOK, got.status, "ready again once a tail succeeds: %s", got.body)
}

// refusingFirstJournalRead fails the first read of a journal entry, as a
// volume that hiccups once at start does.
type refusingFirstJournalRead struct {
	landing.Volume
	refused atomic.Bool
}

func (v *refusingFirstJournalRead) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	if strings.HasPrefix(name, "journal/") && v.refused.CompareAndSwap(false, true) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("input/output error")}
	}
	return v.Volume.ReadFile(ctx, name, max)
}

// A replica whose journal tail is healthy re-derives its first snapshot on
// the Reconcile cadence (5 min), not within Freshness, even when the
// tail's first round began after the first derivation had started or
// failed (here its first journal read fails once): the first snapshot
// places the tail at the snapshot's own place on the journal. Before it
// did, the tail began from its own reading of the journal's head at its
// own start, after the derivation's (its goroutine runs after the first
// read has claimed the derivation, or its first round failed), so the
// first snapshot was never covered and was re-derived at Freshness less
// 1.25 × its derivation's duration: on S3 at 10,000 modules (a 13 s or 39
// s first derivation) within the load program's 20 s run; run against
// that code this test derived 2. Negative control: without the tail, the
// same run derives twice.
func TestAHealthyJournalTailKeepsTheFirstSnapshotOnTheReconcileCadence(t *testing.T) {
	volumetest.ForEach(t, func(t *testing.T, k volumetest.Kind) {
		for _, c := range []struct {
			name        string
			period      time.Duration
			derivations int64
		}{{"tail", 0, 1}, {"control: no tail", NoJournal, 2}} {
			t.Run(c.name, func(t *testing.T) {
				inner, replica := k.Open(t)
				b := newLanding(t, volumetest.KeepExclusive(&refusingFirstJournalRead{Volume: inner}, inner), landing.Options{Replica: "b"})
				a := newLanding(t, replica(), landing.Options{Replica: "a"})
				land(t, a, "Alpha", "1.0.0")
				land(t, a, "Beta", "1.0.0")
				clk := rxtest.NewClock()
				s := NewServedActivation(b, ServedOptions{Clock: clk, Logger: quietLogger(), JournalPeriod: c.period})
				t.Cleanup(func() {
					ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
					defer cancel()
					require.NoError(t, s.Close(ctx))
				})
				read(t, s)
				settle(t, s)
				for elapsed := time.Duration(0); elapsed <= s.Freshness()+s.maintPeriod; elapsed += s.maintPeriod {
					clk.Advance(s.maintPeriod)
					if c.period >= 0 {
						tailedNow(t, s, clk)
					}
					read(t, s)
					settle(t, s)
				}
				assert.Equal(t, c.derivations, s.Derivations(), "derivations in %s", clk.Elapsed())
			})
		}
	})
}

// The bounded contexts the service's own calls run on (a journal read, a
// change's re-read) start no goroutine each, and Close still ends them.
// Against the previous stopped (a goroutine per call waiting for Close or
// the budget) the count grew by 200.
func TestTheServicesBoundedCallsStartNoGoroutineEachAndCloseEndsThem(t *testing.T) {
	l := newLanding(t, landing.DirVolume(t.TempDir()), landing.Options{})
	s := NewServedActivation(l, ServedOptions{Logger: quietLogger(), JournalPeriod: NoJournal}) // the real clock
	const calls = 200
	before := runtime.NumGoroutine()
	var ctxs []context.Context
	for range calls {
		ctx, cancel := s.stopped(time.Hour)
		defer cancel()
		ctxs = append(ctxs, ctx)
	}
	grew := runtime.NumGoroutine() - before
	assert.Less(t, grew, calls/10, "goroutines started by %d calls", calls)
	for _, ctx := range ctxs {
		require.NoError(t, ctx.Err(), "control: not ended before Close")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
	defer cancel()
	require.NoError(t, s.Close(ctx))
	for _, ctx := range ctxs {
		require.ErrorIs(t, ctx.Err(), context.Canceled, "ended by Close")
	}
}
