package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func s3Env(t *testing.T) {
	for _, kv := range s3test.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// claimTestVolume opens a volume on srv under prefix, closed at the test's end.
func claimTestVolume(t *testing.T, srv *s3test.Server, prefix string) *s3volume.Volume {
	t.Helper()
	v, err := s3volume.Open(t.Context(), srv.VolumeURL(prefix), s3volume.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = v.Close() })
	return v
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// abandon stops renewing without releasing: the holder died.
func (c *volumeClaim) abandon() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

// A second registry on the embedded store pointed at the bucket and prefix
// a running one claimed is refused with a *VolumeClaimedError naming the
// volume and the holder; once the first shuts down cleanly (releasing the
// claim) the next starts at once. Control: a start on another prefix of the
// same bucket is admitted while the first runs.
// Negative control, run by hand: without claimVolume in run, the second
// start was admitted ("An error is expected but got nil"); without the
// write in release, the third start failed ("the registry stopped before
// it listened": refused on the first's claim).
func TestASecondEmbeddedRegistryOnTheSameBucketIsRefusedNamingTheHolder(t *testing.T) {
	s3Env(t)
	srv := s3test.Start(t)
	a := start(t, hooks{}, "-volume", srv.VolumeURL("shared"))

	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	err := run(ctx, []string{"-addr", "127.0.0.1:0", "-metrics-addr", "", "-volume", srv.VolumeURL("shared")}, io.Discard, io.Discard, hooks{})
	require.Error(t, err)
	var claimed *VolumeClaimedError
	require.ErrorAs(t, err, &claimed)
	assert.Contains(t, claimed.Volume, "/shared", "the error names the bucket and prefix")
	assert.Contains(t, claimed.Holder, "127.0.0.1:0", "the error names the holder")
	assert.Contains(t, err.Error(), claimed.Holder)
	assert.Contains(t, err.Error(), "lease until")

	other := start(t, hooks{}, "-volume", srv.VolumeURL("elsewhere"))
	other.stop()

	a.stop()
	next := start(t, hooks{}, "-volume", srv.VolumeURL("shared"))
	next.stop()
}

// The same store (a restart on the same -data: one store id) is admitted
// on its own unexpired claim, without waiting for the lease; another store
// is refused. storeID keeps the id in the directory.
// Negative control, run by hand: without the own-claim case in
// claimVolume, the restart was refused ("the same store is admitted":
// unexpected *VolumeClaimedError).
func TestTheSameStoreRestartedIsAdmittedOnItsOwnClaim(t *testing.T) {
	s3Env(t)
	srv := s3test.Start(t)
	v := claimTestVolume(t, srv, "p")
	clk := rxtest.NewClock()
	dir := t.TempDir()
	id, err := storeID(dir)
	require.NoError(t, err)
	again, err := storeID(dir)
	require.NoError(t, err)
	require.Equal(t, id, again, "the store id is kept in -data")
	fresh, err := storeID("")
	require.NoError(t, err)
	require.NotEqual(t, id, fresh, "without -data the store is new")

	first, err := claimVolume(t.Context(), v, clk, id, "host-a :1", quiet)
	require.NoError(t, err)
	first.abandon() // crashed, lease still live

	restarted, err := claimVolume(t.Context(), v, clk, again, "host-a :1", quiet)
	require.NoError(t, err, "the same store is admitted")
	defer func() { assert.NoError(t, restarted.release(context.Background())) }()

	_, err = claimVolume(t.Context(), v, clk, fresh, "host-b :2", quiet)
	var claimed *VolumeClaimedError
	require.ErrorAs(t, err, &claimed, "control: another store is refused")
	assert.Equal(t, "host-a :1", claimed.Holder)
	assert.Equal(t, id, claimed.Store)
}

// A holder that stopped renewing is taken over once its lease ended on the
// clock; one that renews is not. Control: before the lease ends the
// takeover is refused.
// Negative control, run by hand: without the expiry check (every claim
// live), the takeover failed ("the expired claim is taken over":
// unexpected *VolumeClaimedError).
func TestAHolderThatStoppedRenewingIsTakenOverOnceItsLeaseEnds(t *testing.T) {
	s3Env(t)
	srv := s3test.Start(t)
	v := claimTestVolume(t, srv, "p")
	clk := rxtest.NewClock()

	// A renewing holder stays live past its first lease.
	live, err := claimVolume(t.Context(), v, clk, "live", "host-live", quiet)
	require.NoError(t, err)
	for range 4 {
		clk.Advance(claimRenew)
		want := clk.Now().Add(claimLease)
		require.Eventually(t, func() bool {
			_, rec, err := currentClaim(t.Context(), v)
			return err == nil && rec.Expires.Equal(want)
		}, bound, time.Millisecond, "the holder renews its lease")
	}
	_, err = claimVolume(t.Context(), v, clk, "taker", "host-taker", quiet)
	var claimed *VolumeClaimedError
	require.ErrorAs(t, err, &claimed, "a renewing holder keeps its claim")
	live.abandon() // it dies

	clk.Advance(claimLease - time.Second)
	_, err = claimVolume(t.Context(), v, clk, "taker", "host-taker", quiet)
	require.ErrorAs(t, err, &claimed, "control: before the lease ends the claim holds")
	assert.Equal(t, "host-live", claimed.Holder)

	clk.Advance(time.Second)
	taken, err := claimVolume(t.Context(), v, clk, "taker", "host-taker", quiet)
	require.NoError(t, err, "the expired claim is taken over")
	defer func() { assert.NoError(t, taken.release(context.Background())) }()
	_, rec, err := currentClaim(t.Context(), v)
	require.NoError(t, err)
	assert.Equal(t, "taker", rec.Store)
}

// Of several starters racing for one expired claim exactly one wins; the
// others are refused naming the winner. Control: with no claim at stake
// (each on its own prefix) every starter wins.
// Negative control, run by hand: with WriteFile for CreateExclusive in
// claimVolume, all 8 starters won (expected: 1, actual: 8).
func TestStartersRacingForAnExpiredClaimExactlyOneWins(t *testing.T) {
	s3Env(t)
	srv := s3test.Start(t)
	clk := rxtest.NewClock()
	const starters = 8
	race := func(prefix func(i int) string) (won int, refused int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		vols := make([]*s3volume.Volume, starters)
		for i := range vols {
			vols[i] = claimTestVolume(t, srv, prefix(i))
		}
		gate := make(chan struct{}) // all at once
		for i, v := range vols {
			wg.Go(func() {
				<-gate
				c, err := claimVolume(t.Context(), v, clk, "store-"+string(rune('a'+i)), "host", quiet)
				mu.Lock()
				defer mu.Unlock()
				var claimed *VolumeClaimedError
				switch {
				case err == nil:
					won++
					c.abandon()
				case errors.As(err, &claimed):
					refused++
				default:
					t.Errorf("starter %d: %v", i, err)
				}
			})
		}
		close(gate)
		wg.Wait()
		return won, refused
	}

	v := claimTestVolume(t, srv, "p")
	dead, err := claimVolume(t.Context(), v, clk, "dead", "host-dead", quiet)
	require.NoError(t, err)
	dead.abandon()
	clk.Advance(claimLease)

	won, refused := race(func(int) string { return "p" })
	assert.Equal(t, 1, won, "exactly one starter takes the expired claim")
	assert.Equal(t, starters-1, refused)

	won, _ = race(func(i int) string { return "own-" + string(rune('a'+i)) })
	assert.Equal(t, starters, won, "control: with nothing at stake every starter wins")
}

// With -volume, -data keeps the embedded store (mesh.jsonl and its store
// id) while the modules are on the bucket: a restart on the same -data
// prints the same demo key and holds the claim again. Control: a start
// with another -data on that bucket is another store, refused while the
// first runs.
// Negative control, run by hand: with -data and -volume refused together
// (as before), the first start failed ("the registry stopped before it
// listened").
func TestWithVolumeDataKeepsTheEmbeddedStoreAndARestartHoldsItsClaim(t *testing.T) {
	s3Env(t)
	srv := s3test.Start(t)
	dir := t.TempDir()
	a := start(t, hooks{}, "-data", dir, "-volume", srv.VolumeURL("kept"))
	a.stop()
	b := start(t, hooks{}, "-data", dir, "-volume", srv.VolumeURL("kept"))
	assert.Equal(t, a.key, b.key, "the restart keeps the mesh and so the demo key")

	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	err := run(ctx, []string{"-addr", "127.0.0.1:0", "-metrics-addr", "", "-data", t.TempDir(), "-volume", srv.VolumeURL("kept")}, io.Discard, io.Discard, hooks{})
	var claimed *VolumeClaimedError
	require.ErrorAs(t, err, &claimed, "control: another store is refused")
	b.stop()
}
