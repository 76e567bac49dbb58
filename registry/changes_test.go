package registry

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// newFeedServed is a ServedActivation on l announcing and hearing writes
// on m, closed when the test ends.
func newFeedServed(t *testing.T, l *landing.ModuleLanding, clk *rxtest.Clock, m mesh.Store) *ServedActivation {
	t.Helper()
	s := NewServedActivation(l, ServedOptions{Clock: clk, Changes: m, Logger: quietLogger(), JournalPeriod: NoJournal})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
		defer cancel()
		require.NoError(t, s.Close(ctx))
	})
	return s
}

func newMem(t *testing.T) *memstore.Store {
	t.Helper()
	m, err := memstore.New(memstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// eventually waits at most testkit.Bound for cond, which the service's own
// goroutine makes true: a bounded wait whose outcome is asserted.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	require.Eventually(t, cond, testkit.Bound, time.Millisecond, "%s did not happen within %s", what, testkit.Bound)
}

// feedLive waits until s's change feed has answered.
func feedLive(t *testing.T, s *ServedActivation) {
	t.Helper()
	eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.feedLive
	}, "the change feed answering")
}

func TestAnotherReplicasLandingIsAbsorbedThroughTheFeedByReadingOnlyThatModule(t *testing.T) {
	root := t.TempDir()
	bv := testkit.CountingVolume(landing.DirVolume(root))
	la := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "a"})
	lb := newLanding(t, bv, landing.Options{Replica: "b"})
	const modules = 40
	for i := range modules {
		land(t, la, fmt.Sprintf("Mod%02d", i), "1.0.0")
	}
	m := newMem(t)
	clk := rxtest.NewClock()
	a := newFeedServed(t, la, clk, m)
	b := newFeedServed(t, lb, clk, m)
	// Negative control: a replica without the feed, on the same volume.
	c := newServed(t, newLanding(t, landing.DirVolume(root), landing.Options{Replica: "c"}), clk)
	read(t, a)
	read(t, c)
	before := bv.Ops()
	first := read(t, b)
	scan := bv.Ops().Sub(before).Total()
	feedLive(t, b)

	before = bv.Ops()
	land(t, a, "Mod07", "2.0.0")
	land(t, a, "Fresh", "1.0.0")
	eventually(t, func() bool { return b.Absorbed() >= 2 }, "b absorbing a's two writes")
	snap := read(t, b)
	assert.Equal(t, "2.0.0", servedVersions(snap.Activation())["Mod07"])
	assert.Equal(t, "1.0.0", servedVersions(snap.Activation())["Fresh"])
	assert.Greater(t, snap.Seq, first.Seq)
	assert.EqualValues(t, 1, b.Derivations(), "absorbed without a derivation")
	absorb := bv.Ops().Sub(before).Total()
	assert.LessOrEqual(t, absorb, int64(2*3), "each write cost a few reads of its own module")
	assert.Greater(t, scan, int64(modules), "a derivation reads every module")

	// The replica without the feed serves neither until its snapshot is due.
	assert.NotContains(t, servedVersions(read(t, c).Activation()), "Fresh")
	assert.EqualValues(t, 1, c.Derivations())
}

func TestAnUninstallOnAnotherReplicaIsAbsorbedThroughTheFeed(t *testing.T) {
	root := t.TempDir()
	la := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "a"})
	lb := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "b"})
	land(t, la, "Alpha", "1.0.0")
	land(t, la, "Beta", "1.0.0")
	m := newMem(t)
	clk := rxtest.NewClock()
	a := newFeedServed(t, la, clk, m)
	b := newFeedServed(t, lb, clk, m)
	read(t, a)
	read(t, b)
	feedLive(t, b)
	_, err := a.Uninstall(context.Background(), "Alpha")
	require.NoError(t, err)
	eventually(t, func() bool { return b.Absorbed() >= 1 }, "b absorbing the uninstall")
	assert.Equal(t, map[string]string{"Beta": "1.0.0"}, servedVersions(read(t, b).Activation()))
}

// feedWithResets is a mesh whose change-feed query also carries frames the
// test sends: a store wrapper, as a user could write one.
type feedWithResets struct {
	mesh.Store
	frames *rx.Subject[mesh.Change]
}

func (f *feedWithResets) Query(q string) rx.Observable[mesh.Change] {
	return rx.Merge(f.Store.Query(q), f.frames)
}

// The feed is the fast path and no bound rests on it: a live feed does not
// slow the full re-derivation below Freshness (only the journal's tail
// does, see journal_test.go). A Reset reconciles at once.
func TestAFeedResetReconcilesAtOnceAndALiveFeedAloneDoesNotSlowTheCadence(t *testing.T) {
	root := t.TempDir()
	la := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "a"})
	lb := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "b"})
	land(t, la, "Alpha", "1.0.0")
	m := &feedWithResets{Store: newMem(t), frames: rx.NewSubject[mesh.Change]()}
	clk := rxtest.NewClock()
	b := newFeedServed(t, lb, clk, m)
	read(t, b)
	feedLive(t, b)

	// Derived while the feed is live, without a journal tail: due at
	// Freshness all the same.
	clk.Advance(b.Freshness())
	read(t, b)
	settle(t, b)
	assert.EqualValues(t, 2, b.Derivations(), "re-derived at Freshness although the feed is live")

	// A write the feed never heard of (made behind the service's back),
	// then a Reset: the gap is reconciled at once.
	land(t, la, "Gap", "1.0.0")
	// Negative control: without the Reset nothing re-reads it yet.
	assert.NotContains(t, servedVersions(read(t, b).Activation()), "Gap")
	assert.EqualValues(t, 2, b.Derivations())
	m.frames.OnNext(mesh.Change{Kind: mesh.Reset})
	eventually(t, func() bool { return b.Derivations() == 3 }, "the reconciliation after the Reset")
	settle(t, b)
	assert.Contains(t, servedVersions(read(t, b).Activation()), "Gap")
}

func TestAPatchMadeDuringADerivationIsNotUndoneByIt(t *testing.T) {
	root := t.TempDir()
	held := &heldVolume{Volume: landing.DirVolume(root)}
	la := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "a"})
	lb := newLanding(t, held, landing.Options{Replica: "b"})
	land(t, la, "Alpha", "1.0.0")
	m := newMem(t)
	clk := rxtest.NewClock()
	a := newFeedServed(t, la, clk, m)
	b := newFeedServed(t, lb, clk, m)
	read(t, b)
	feedLive(t, b)
	clk.Advance(DefaultReconcile) // the feed is live: the reconciliation cadence
	gate := testkit.NewReleaser(t)
	entered := held.holdAfterListing(gate)
	read(t, b) // due: a derivation lists the modules and waits
	testkit.Receive(t, entered, "the derivation listing")
	d := b.inflight.Current()

	land(t, a, "Alpha", "2.0.0") // absorbed while the derivation waits
	eventually(t, func() bool { return b.Absorbed() >= 1 }, "b absorbing a's write")
	// The derivation reads Alpha's records after the write, so make the
	// case hard: it must not matter in which order they land.
	gate.Release()
	_, _ = rx.Collect[Snapshot](context.Background(), d.Result())
	assert.Equal(t, "2.0.0", servedVersions(read(t, b).Activation())["Alpha"])

	// Negative control: the patch re-applied over a derivation is what
	// keeps a newer record; an older listing without it loses the write.
	oldRecs := []landing.Record{{Module: "Alpha", State: landing.Landed, Version: "1.0.0", ID: "1"}}
	old := newModuleList(oldRecs)
	p := patch{key: "alpha", rec: landing.Record{Module: "Alpha", State: landing.Landed, Version: "2.0.0", ID: "2"}, found: true}
	mods, content, _ := old.patched(contentDigest(oldRecs), []patch{p})
	assert.Equal(t, "2.0.0", mods.flat()[0].Version)
	assert.Equal(t, "1.0.0", old.flat()[0].Version, "a snapshot is a value: patching copies")
	again, _, _ := mods.patched(content, []patch{{key: "alpha", rec: oldRecs[0], found: true}})
	assert.Equal(t, "2.0.0", again.flat()[0].Version, "an older record changes nothing")
}

func TestCloseDuringARunningDerivationCancelsItAndReturnsWithoutError(t *testing.T) {
	for _, deaf := range []bool{false, true} {
		root := t.TempDir()
		var v landing.Volume
		var entered <-chan struct{}
		var gate *testkit.Releaser
		if deaf {
			// Negative control: a scan that ignores its context cannot be
			// cancelled, and Close says so at its budget.
			dv := &deafVolume{Volume: landing.DirVolume(root), entered: make(chan struct{}, 1), gate: testkit.NewReleaser(t)}
			v, entered, gate = dv, dv.entered, dv.gate
		} else {
			held := &heldVolume{Volume: landing.DirVolume(root)}
			gate = testkit.NewReleaser(t)
			v, entered = held, held.hold(gate)
		}
		l := newLanding(t, v, landing.Options{Replica: "a"})
		s := NewServedActivation(l, ServedOptions{Logger: quietLogger()})
		rec := rxtest.Record(rxtest.NewClock(), s.Read())
		testkit.Receive(t, entered, "the derivation reaching the volume")

		// The deaf scan is closed at a short budget (the budget is the
		// subject: Close says so when it passes). The held one is not
		// released until the test ends, so Close returns within any
		// bound only if it cancels the scan; the bound is a ceiling for a
		// hang (at 200ms, a loaded machine could pass it while the
		// cancellation was on its way).
		budget := testkit.Bound
		if deaf {
			budget = 200 * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		err := s.Close(ctx)
		cancel()
		if deaf {
			require.Error(t, err)
			assert.Contains(t, err.Error(), "scan has not returned")
			gate.Release()
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
			require.NoError(t, s.Close(ctx))
			cancel()
		} else {
			require.NoError(t, err, "the derivation was cancelled, not waited out")
		}
		require.True(t, rec.WaitTerminated(testkit.Bound))
		if !deaf {
			assert.ErrorIs(t, rec.Err(), landing.ErrClosed, "its reader is told the service closed")
		}
	}
}

func TestWithTheFeedALocalWriteIsPatchedInAtOnceAndADerivationStartedBeforeItDoesNotUndoIt(t *testing.T) {
	root := t.TempDir()
	held := &heldVolume{Volume: landing.DirVolume(root)}
	la := newLanding(t, held, landing.Options{Replica: "a"})
	clk := rxtest.NewClock()
	s := newFeedServed(t, la, clk, newMem(t))
	land(t, s, "Alpha", "1.0.0")
	read(t, s)
	feedLive(t, s)
	clk.Advance(DefaultReconcile)
	gate := testkit.NewReleaser(t)
	entered := held.holdAfterListing(gate)
	read(t, s) // due: a reconciliation lists the modules and waits
	testkit.Receive(t, entered, "the reconciliation listing")
	d := s.inflight.Current()

	land(t, s, "Beta", "1.0.0") // a local write while it runs
	assert.Equal(t, "1.0.0", servedVersions(read(t, s).Activation())["Beta"], "served at once, no derivation waited for")
	// Negative control: a write past the service is not patched in.
	land(t, la, "Gamma", "1.0.0")
	assert.NotContains(t, servedVersions(read(t, s).Activation()), "Gamma")
	assert.EqualValues(t, 2, s.Derivations(), "the first and the reconciliation: the write started none")

	gate.Release()
	_, _ = rx.Collect[Snapshot](context.Background(), d.Result())
	snap := read(t, s)
	assert.Equal(t, "1.0.0", servedVersions(snap.Activation())["Beta"], "the reconciliation listed before the write: the patch is re-applied over it")
	assert.Equal(t, d.Meta.started, snap.DerivedAt, "and it was published")
}

// The seed's served-activation properties on the incremental path (the
// change feed on). Their negative controls are the seed tests' own: the
// claim, the slot and the service-owned subscription are the same code.

func TestWithTheFeedConcurrentDueReadersShareOneReconciliation(t *testing.T) {
	root := t.TempDir()
	held := &heldVolume{Volume: landing.DirVolume(root)}
	s := newFeedServed(t, newLanding(t, held, landing.Options{Replica: "a"}), rxtest.NewClock(), newMem(t))
	clk := s.clk.(*rxtest.Clock)
	land(t, s, "Alpha", "1.0.0")
	read(t, s)
	feedLive(t, s)
	clk.Advance(s.reconcile)
	gate := testkit.NewReleaser(t)
	entered := held.hold(gate)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() { read(t, s) })
	}
	wg.Wait()
	testkit.Receive(t, entered, "the reconciliation reaching the volume")
	assert.EqualValues(t, 2, s.Derivations(), "100 due readers, one reconciliation")
	gate.Release()
	settle(t, s)
}

func TestWithTheFeedAnAbortedRequestDoesNotCacheAFault(t *testing.T) {
	root := t.TempDir()
	held := &heldVolume{Volume: landing.DirVolume(root)}
	la := newLanding(t, held, landing.Options{Replica: "a"})
	land(t, la, "Alpha", "1.0.0")
	clk := rxtest.NewClock()
	s := newFeedServed(t, la, clk, newMem(t))
	gate := testkit.NewReleaser(t)
	entered := held.hold(gate)
	aborted := rxtest.Record(clk, s.Read())
	testkit.Receive(t, entered, "the derivation reaching the volume")
	aborted.Unsubscribe()
	gate.Release()
	settle(t, s)
	assert.Equal(t, "1.0.0", servedVersions(read(t, s).Activation())["Alpha"])
	assert.EqualValues(t, 1, s.Derivations(), "the next reader got the derivation the aborted one started")
}
