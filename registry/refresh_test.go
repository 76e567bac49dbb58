package registry

import (
	"github.com/meshrx/meshrx/registry/landing/volumetest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// deriveTaking runs the derivation a read starts (or joins) with its scan
// held for took of virtual time, and waits for it.
func deriveTaking(t *testing.T, s *ServedActivation, held *heldVolume, clk *rxtest.Clock, took time.Duration) {
	t.Helper()
	gate := testkit.NewReleaser(t)
	entered := held.hold(gate)
	r := rxtest.Record(clk, s.Read())
	testkit.Receive(t, entered, "the derivation reaching the volume")
	clk.Advance(took)
	gate.Release()
	settle(t, s)
	require.True(t, r.WaitTerminated(testkit.Bound))
	require.NoError(t, r.Err())
}

// Negative control, by hand: with a re-derivation due at Freshness itself
// (refreshAfter returning dueAfter, as before), the read at age 20 s starts
// nothing and this fails with 1 derivation; a record another replica wrote
// right after a scan then waits Freshness plus a derivation.
func TestARederivationStartsItsLastDurationAheadSoThatItsSuccessorIsPublishedBeforeTheSnapshotIsDue(t *testing.T) {
	volumetest.ForEach(t, func(t *testing.T, k volumetest.Kind) {
		a, _, _, held := replicasOn(t, k)
		clk := rxtest.NewClock()
		s := newServed(t, a, clk)
		require.Equal(t, 30*time.Second, s.Freshness())
		land(t, a, "Alpha", "1.0.0")
		began := clk.Now()
		deriveTaking(t, s, held, clk, 8*time.Second)
		snap := read(t, s)
		require.Equal(t, began, snap.DerivedAt, "a snapshot is as old as its scan's start")

		// 8 s and a quarter more ahead of the 30 s cadence: at age 20 s.
		clk.Advance(began.Add(20*time.Second).Sub(clk.Now()) - time.Millisecond)
		read(t, s)
		assert.EqualValues(t, 1, s.Derivations(), "not yet")
		clk.Advance(time.Millisecond)
		deriveTaking(t, s, held, clk, 8*time.Second) // the due read answers at once and starts it
		assert.EqualValues(t, 2, s.Derivations())
		next := read(t, s)
		assert.Equal(t, began.Add(20*time.Second), next.DerivedAt)
		assert.Less(t, clk.Since(began), s.Freshness(), "the successor is served before the snapshot it replaced was due")
		assert.Equal(t, servedVersions(snap.Activation()), servedVersions(next.Activation()))
	})
}

// A derivation whose lead reaches back past its own end (here 25 s ahead
// of 30) is followed at once by the next, and never overlaps it.
func TestADerivationLongerThanItsLeadAllowsIsFollowedAtOnceByTheNextNeverOverlappingIt(t *testing.T) {
	volumetest.ForEach(t, func(t *testing.T, k volumetest.Kind) {
		a, _, _, held := replicasOn(t, k)
		clk := rxtest.NewClock()
		s := newServed(t, a, clk)
		land(t, a, "Alpha", "1.0.0")
		deriveTaking(t, s, held, clk, 20*time.Second)
		require.EqualValues(t, 1, s.Derivations())
		// Published at age 20 s, past its refresh age of 5 s: the next read
		// starts the successor.
		deriveTaking(t, s, held, clk, 20*time.Second)
		assert.EqualValues(t, 2, s.Derivations())
		assert.Nil(t, s.inflight.Current(), "one derivation at a time: none is left running")
	})
}
