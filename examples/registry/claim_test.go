package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The fenced volume passes on what the landing asks of the S3 volume it
// wraps: its exclusive creates, its streaming, and its name limit (an
// archive whose files would not fit the store's keys is refused before
// anything is written).
var (
	_ landing.ExclusiveVolume   = (*fencedVolume)(nil)
	_ landing.StreamingVolume   = (*fencedVolume)(nil)
	_ landing.NameLimitedVolume = (*fencedVolume)(nil)
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
	c.halt()
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
	assert.NotEmpty(t, claimed.Holder, "the error names the holder (its address: TestTheClaimNamesTheAddressTheRegistryListensOn)")
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

// lostWithin waits, within the bound, for c to count its claim lost and
// returns the loss.
func lostWithin(t *testing.T, c *volumeClaim) *ClaimLostError {
	t.Helper()
	select {
	case <-c.lost.Done():
	case <-time.After(bound):
		require.FailNow(t, "the holder did not count its claim lost within the bound")
	}
	var lost *ClaimLostError
	require.ErrorAs(t, c.err(), &lost)
	return lost
}

// A holder whose claim another registry took over (here the taker's clock
// is a lease ahead, as a holder paused past its lease is, on waking, to
// the registry that took over meanwhile) finds the later claim at its next
// renewal: it counts the claim lost, logs an Error naming the volume and
// the new holder, leaves the new claim as it is, and writes nothing more
// (its volume refuses every call before a request is made, as a 503
// would say: landing.IsUnavailable). Control: before the takeover the
// same renewal extends its lease.
// Negative control, run by hand: without the in-force check in renewOnce
// (renewing whatever the claim in force), the old holder renewed its own
// claim beside the taker's and never counted it lost ("the holder did not
// count its claim lost within the bound").
func TestAHolderWhoseClaimWasTakenOverCountsItLostAtItsNextRenewal(t *testing.T) {
	s3Env(t)
	srv := s3test.Start(t)
	v := claimTestVolume(t, srv, "p")
	clk := rxtest.NewClock()
	var log testkit.SyncBuffer
	old, err := claimVolume(t.Context(), v, clk, "old", "host-old :1", slog.New(slog.NewTextHandler(&log, nil)))
	require.NoError(t, err)
	defer func() { assert.NoError(t, old.release(context.Background()), "a lost claim is not released") }()
	fv := old.volume()

	clk.Advance(claimRenew)
	want := clk.Now().Add(claimLease)
	require.Eventually(t, func() bool {
		_, rec, err := currentClaim(t.Context(), v)
		return err == nil && rec.Expires.Equal(want)
	}, bound, time.Millisecond, "control: the holder renews while its claim is in force")

	ahead := rxtest.NewClock()
	ahead.Advance(claimRenew + claimLease)
	taker, err := claimVolume(t.Context(), claimTestVolume(t, srv, "p"), ahead, "taker", "host-taker :2", quiet)
	require.NoError(t, err, "the taker finds the lease ended on its clock")
	defer func() { assert.NoError(t, taker.release(context.Background())) }()

	clk.Advance(claimRenew)
	lost := lostWithin(t, old)
	assert.Equal(t, "host-taker :2", lost.Holder)
	assert.Equal(t, "taker", lost.Store)
	assert.Equal(t, v.String(), lost.Volume)
	assert.Contains(t, lost.Reason, claimName(2))
	assert.Contains(t, lost.Error(), "host-taker :2")
	logged := log.String()
	assert.Contains(t, logged, "level=ERROR")
	assert.Contains(t, logged, v.String())
	assert.Contains(t, logged, "host-taker :2")

	before := srv.Requests()
	err = fv.WriteFile(t.Context(), "after-the-loss", []byte("x"))
	var refused *ClaimLostError
	require.ErrorAs(t, err, &refused, "a write after the loss is refused")
	assert.True(t, landing.IsUnavailable(err))
	_, err = fv.Stat(t.Context(), "store-claim")
	require.ErrorAs(t, err, &refused, "and a read")
	assert.Equal(t, before, srv.Requests(), "no request reaches the store after the loss")

	gen, rec, err := currentClaim(t.Context(), v)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), gen)
	assert.Equal(t, "taker", rec.Store, "the new claim is left as it is")
}

// A holder that cannot renew (its volume stalls) counts its claim lost at
// the fence, claimMargin before its lease ends, on its own clock: the
// renewal stuck at the store is cut there, a write in flight is cancelled
// and reports the loss instead of its outcome (a PUT the store had whole
// may still be applied: claimMargin is room for it), and no new call
// starts. Another registry may take over only
// at the lease's end, after the fence. Control: a second before the fence
// the claim holds; between the fence and the lease's end a taker is
// refused.
// Negative control, run by hand: without the fence (err counting only a
// renewal's finding, no deadline on the renewal), the write in flight was
// still waiting on the stalled store at the bound ("the write in flight
// did not end within the bound").
func TestAHolderThatCannotRenewStopsWritingBeforeItsLeaseCanBeTakenOver(t *testing.T) {
	s3Env(t)
	srv := s3test.Start(t)
	v := claimTestVolume(t, srv, "p")
	clk := rxtest.NewClock()
	c, err := claimVolume(t.Context(), v, clk, "holder", "host-holder :1", quiet)
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.release(context.Background())) }()
	fv := c.volume()

	entered := srv.Stall()
	waitFor := func(what string) {
		t.Helper()
		deadline := time.After(bound)
		for {
			select {
			case req := <-entered:
				if strings.Contains(req, what) {
					return
				}
			case <-deadline:
				require.FailNow(t, "no stalled request "+what+" within the bound")
			}
		}
	}
	clk.Advance(claimRenew)
	waitFor("GET") // the renewal's reading of the claim in force
	wrote := make(chan error, 1)
	go func() { wrote <- fv.WriteFile(context.Background(), "in-flight", []byte("x")) }()
	waitFor("PUT")

	fence := claimLease - claimMargin
	clk.AdvanceTo(fence - time.Second)
	require.NoError(t, c.err(), "control: before the fence the claim holds")
	clk.AdvanceTo(fence)
	var lost *ClaimLostError
	select {
	case err := <-wrote:
		require.ErrorAs(t, err, &lost, "the write in flight reports the loss")
	case <-time.After(bound):
		require.FailNow(t, "the write in flight did not end within the bound")
	}
	lost = lostWithin(t, c)
	assert.Contains(t, lost.Reason, "no renewal succeeded")
	assert.Empty(t, lost.Holder, "nobody else holds it yet")

	srv.Resume()
	before := srv.Requests()
	require.ErrorAs(t, fv.WriteFile(t.Context(), "later", []byte("x")), &lost, "no new write starts")
	assert.Equal(t, before, srv.Requests())

	taker := claimTestVolume(t, srv, "p")
	_, err = claimVolume(t.Context(), taker, clk, "taker", "host-taker :2", quiet)
	var claimed *VolumeClaimedError
	require.ErrorAs(t, err, &claimed, "control: between the fence and the lease's end the claim holds")
	clk.AdvanceTo(claimLease)
	taken, err := claimVolume(t.Context(), taker, clk, "taker", "host-taker :2", quiet)
	require.NoError(t, err, "at the lease's end another registry takes over")
	assert.NoError(t, taken.release(context.Background()))
}

// A registry whose volume another registry took over stops: run returns a
// *ClaimLostError naming the new holder, so the process exits non-zero
// (a supervisor restarts it, and the restart is refused while the other's
// claim is live). Control: a restart on another store is refused with a
// *VolumeClaimedError naming the taker.
// Negative control, run by hand: without the claim's loss in run's serve
// loop, the registry kept serving ("the registry did not stop on its own
// within the bound").
func TestARegistryWhoseVolumeWasTakenOverStopsWithAClaimLostError(t *testing.T) {
	s3Env(t)
	srv := s3test.Start(t)
	clk := rxtest.NewClock()
	a := start(t, hooks{clock: clk}, "-volume", srv.VolumeURL("shared"))

	ahead := rxtest.NewClock()
	ahead.Advance(claimLease)
	taker, err := claimVolume(t.Context(), claimTestVolume(t, srv, "shared"), ahead, "taker", "host-taker :2", quiet)
	require.NoError(t, err)
	defer func() { assert.NoError(t, taker.release(context.Background())) }()

	clk.Advance(claimRenew)
	err = a.exited()
	var lost *ClaimLostError
	require.ErrorAs(t, err, &lost, "the registry stops on the loss")
	assert.Equal(t, "host-taker :2", lost.Holder)
	assert.Contains(t, lost.Volume, "/shared")

	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	err = run(ctx, []string{"-addr", "127.0.0.1:0", "-metrics-addr", "", "-volume", srv.VolumeURL("shared")}, io.Discard, io.Discard, hooks{clock: ahead})
	var claimed *VolumeClaimedError
	require.ErrorAs(t, err, &claimed, "control: a restart is refused while the taker's claim is live")
	assert.Equal(t, "host-taker :2", claimed.Holder)
}

// The claim names the address the registry listens on, the port bound
// (-addr 127.0.0.1:0 picks one), and its host: a refused start says where
// the holder is.
// Negative control, run by hand: without announce in run, the holder was
// recorded as the flag gave it ("vm 127.0.0.1:0" does not contain
// "127.0.0.1:<port>").
func TestTheClaimNamesTheAddressTheRegistryListensOn(t *testing.T) {
	s3Env(t)
	srv := s3test.Start(t)
	a := start(t, hooks{}, "-volume", srv.VolumeURL("shared"))
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	err := run(ctx, []string{"-addr", "127.0.0.1:0", "-metrics-addr", "", "-volume", srv.VolumeURL("shared")}, io.Discard, io.Discard, hooks{})
	var claimed *VolumeClaimedError
	require.ErrorAs(t, err, &claimed)
	host, _ := os.Hostname()
	assert.Equal(t, host+" "+strings.TrimPrefix(a.url, "http://"), claimed.Holder)
	assert.Contains(t, err.Error(), claimed.Holder)
}
