package landing

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claimRace holds every claim's rename until both replicas have reached
// theirs, so both have found the version unclaimed: the race at its worst.
// The wait is bounded: a replica that never arrives fails the claim naming
// what it waited on, instead of hanging the test.
//
// With replace set it renames over an existing claim, as a volume without
// an atomic "rename unless it exists" would (the negative control). The
// removal and the rename run one claim at a time under one lock: the first
// claim renames into an empty place, the second removes that claim and
// renames over it, every time. (Without the lock both removals could run
// before either rename, and the second rename would then be refused by the
// claim the first one just placed: the control then saw one landing, not
// two, about once in twenty runs under load.) replaced counts the claims a
// rename replaced, so the control shows its own mechanism ran.
type claimRace struct {
	Volume
	barrier  *arrival
	replace  bool
	one      *sync.Mutex
	replaced *int
}

// arrival is a bounded barrier for n parties.
type arrival struct {
	mu      sync.Mutex
	n       int
	arrived chan struct{}
}

func newArrival(parties int) *arrival { return &arrival{n: parties, arrived: make(chan struct{})} }

func (a *arrival) arriveAndWait(ctx context.Context) error {
	a.mu.Lock()
	a.n--
	if a.n == 0 {
		close(a.arrived)
	}
	a.mu.Unlock()
	timer := time.NewTimer(testkit.Bound)
	defer timer.Stop()
	select {
	case <-a.arrived:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the other replica's claim: %w", ctx.Err())
	case <-timer.C:
		return fmt.Errorf("waiting for the other replica's claim: it did not arrive within %s", testkit.Bound)
	}
}

func (v claimRace) Rename(ctx context.Context, oldname, newname string) error {
	if path.Base(path.Dir(newname)) == "versions" {
		if err := v.barrier.arriveAndWait(ctx); err != nil {
			return err
		}
		if v.replace {
			v.one.Lock()
			defer v.one.Unlock()
			if _, err := v.Volume.Stat(ctx, newname); err == nil {
				*v.replaced++
				if err := v.Volume.RemoveAll(ctx, newname); err != nil {
					return err
				}
			}
		}
	}
	return v.Volume.Rename(ctx, oldname, newname)
}

// CreateExclusive is claimRace's hold on an ExclusiveVolume: every claim's
// conditional create waits at the barrier; with replace set it is a plain
// write that overwrites an existing claim (a store without conditional
// creates, or a PUT without If-None-Match: the negative control).
func (v claimRaceX) CreateExclusive(ctx context.Context, name string, data []byte) error {
	if path.Base(path.Dir(path.Dir(name))) == "versions" {
		if err := v.barrier.arriveAndWait(ctx); err != nil {
			return err
		}
		if v.replace {
			v.one.Lock()
			defer v.one.Unlock()
			if _, err := v.Volume.Stat(ctx, name); err == nil {
				*v.replaced++
			}
			return v.Volume.WriteFile(ctx, name, data)
		}
	}
	return v.x.CreateExclusive(ctx, name, data)
}

// claimRaceX is a claimRace on an ExclusiveVolume.
type claimRaceX struct {
	claimRace
	x ExclusiveVolume
}

// raceOn returns a claimRace on v, an ExclusiveVolume when v is one.
func raceOn(v Volume, r claimRace) Volume {
	r.Volume = v
	if x, ok := v.(ExclusiveVolume); ok {
		return claimRaceX{claimRace: r, x: x}
	}
	return r
}

func TestOfConcurrentLandingsOnSeveralReplicasExactlyOneClaimsTheVersion(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		testExactlyOneClaim(t, k)
	})
}

func testExactlyOneClaim(t *testing.T, k volumeKind) {
	type outcome struct{ created, conflicts, replaced int }
	const parties = 3
	run := func(t *testing.T, replace bool) outcome {
		_, handle := k.open(t)
		barrier := newArrival(parties)
		var one sync.Mutex
		var out outcome
		race := func(replica string) *ModuleLanding {
			return newLanding(t, raceOn(handle(), claimRace{barrier: barrier, replace: replace, one: &one, replaced: &out.replaced}), Options{Replica: replica})
		}
		var replicas []*ModuleLanding
		for i := range parties {
			replicas = append(replicas, race(fmt.Sprintf("r%d", i)))
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, l := range replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				archive := testkit.ModuleArchive(t, "Sec.Base", "1.0.0", i+1)
				_, c, err := l.LandArchive(t.Context(), "Sec.Base", "1.0.0", bytes.NewReader(archive), int64(len(archive)))
				var conflict *VersionConflictError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && c:
					out.created++
				case assert.ErrorAs(t, err, &conflict):
					out.conflicts++
				}
			}()
		}
		wg.Wait()
		return out
	}
	got := run(t, false)
	assert.Equal(t, 1, got.created, "exactly one landing claims the version")
	assert.Equal(t, parties-1, got.conflicts, "the others are told the version is taken")

	t.Run("negative control: a claim that can be replaced lets every one land", func(t *testing.T) {
		got := run(t, true)
		assert.Equal(t, parties-1, got.replaced, "each later claim replaced the one before")
		assert.Equal(t, parties, got.created)
		assert.Zero(t, got.conflicts)
	})
}

func TestGenerationsThatNothingReferencesAreRemovedAfterTheirGrace(t *testing.T) {
	root := t.TempDir()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l := newLanding(t, DirVolume(root), Options{Clock: clk})
	ctx := t.Context()
	v1, err := l.Land(ctx, "Crm", "1.0.0", testkit.ModuleArchive(t, "Crm", "1.0.0", 1))
	require.NoError(t, err)
	// Two generations no record names, as a landing that failed after
	// placing its bytes leaves: one old, one recent.
	old := newStamp(clk.Now().Add(-2 * GenerationGrace))
	recent := newStamp(clk.Now())
	for _, g := range []string{old, recent} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.FromSlash(generationFilesDir("crm", g))), 0o755))
	}
	// The volume's clock agrees: the old orphan was placed long ago.
	ageOnVolume(t, root, old, 2*GenerationGrace)
	clk.Set(clk.Now().Add(time.Minute))
	v2, err := l.Land(ctx, "Crm", "2.0.0", testkit.ModuleArchive(t, "Crm", "2.0.0", 1))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{v1.Generation, v2.Generation, recent}, testkit.Generations(t, root, "Crm"),
		"the old orphan is removed; referenced generations and a recent orphan (a landing on another replica may be about to record it) stay")

	// Control: past its grace the recent orphan goes too; v1 stays shelvable.
	clk.Set(clk.Now().Add(GenerationGrace))
	ageOnVolume(t, root, recent, 2*GenerationGrace)
	v3, err := l.Land(ctx, "Crm", "3.0.0", testkit.ModuleArchive(t, "Crm", "3.0.0", 1))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{v1.Generation, v2.Generation, v3.Generation}, testkit.Generations(t, root, "Crm"))
	_, err = l.Shelve(ctx, "Crm", "1.0.0")
	require.NoError(t, err)
}

// ageOnVolume sets the modification time of Crm's generation gen by, as
// the volume's clock would have stamped it that long ago.
func ageOnVolume(t *testing.T, root, gen string, by time.Duration) {
	t.Helper()
	dir := filepath.Join(root, filepath.FromSlash(generationDir("crm", gen)))
	at := time.Now().Add(-by)
	require.NoError(t, os.Chtimes(dir, at, at))
}

// TestAReplicaWhoseClockRunsAnHourAheadDoesNotCollectAGenerationAnotherIsAboutToRecord:
// a generation placed a moment ago (by the volume's clock) by a replica
// that has not written its record yet stays, although this replica's clock
// says its stamp is an hour old. Negative control: the same generation
// placed long ago on the volume is collected.
func TestAReplicaWhoseClockRunsAnHourAheadDoesNotCollectAGenerationAnotherIsAboutToRecord(t *testing.T) {
	root := t.TempDir()
	ahead := clock.NewMock()
	ahead.Set(time.Now().Add(time.Hour))
	l := newLanding(t, DirVolume(root), Options{Clock: ahead})
	ctx := t.Context()
	_, err := l.Land(ctx, "Crm", "1.0.0", testkit.ModuleArchive(t, "Crm", "1.0.0", 1))
	require.NoError(t, err)
	inFlight := newStamp(time.Now()) // another replica's, placed now, its record not written yet
	require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.FromSlash(generationFilesDir("crm", inFlight))), 0o755))
	_, err = l.Land(ctx, "Crm", "2.0.0", testkit.ModuleArchive(t, "Crm", "2.0.0", 1))
	require.NoError(t, err)
	assert.Contains(t, testkit.Generations(t, root, "Crm"), inFlight, "recent on the volume: kept")

	ageOnVolume(t, root, inFlight, 2*GenerationGrace)
	_, err = l.Land(ctx, "Crm", "3.0.0", testkit.ModuleArchive(t, "Crm", "3.0.0", 1))
	require.NoError(t, err)
	assert.NotContains(t, testkit.Generations(t, root, "Crm"), inFlight, "control: old on the volume too, collected")
}

// A version claim larger than its bound is reported unreadable, naming what
// to do, like a claim that does not decode; not as an outage. Control: the
// same landing once the claim is removed lands again. Negative control
// (run): with readClaim passing the volume's refusal on as a read failure,
// the error does not say the claim is unreadable.
func TestAVersionClaimLargerThanItsBoundIsReportedUnreadable(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		v := k.openVolume(t)
		l := newLanding(t, v, Options{Replica: "r"})
		archive := testkit.ModuleArchive(t, "Claimed", "1.0.0", 1)
		_, err := l.Land(ctx, "Claimed", "1.0.0", archive)
		require.NoError(t, err)
		claim := path.Join(versionClaimDir(moduleKey("Claimed"), "1.0.0"), claimName)
		require.NoError(t, v.WriteFile(ctx, claim, bytes.Repeat([]byte(" "), maxEntryBytes+1)))

		_, err = l.Land(ctx, "Claimed", "1.0.0", archive)
		require.ErrorContains(t, err, "unreadable")
		assert.ErrorContains(t, err, "remove it to publish that version again")
		assert.False(t, IsUnavailable(err), "%v", err)

		require.NoError(t, v.RemoveAll(ctx, path.Dir(claim)))
		_, err = l.Land(ctx, "Claimed", "1.0.0", archive)
		assert.NoError(t, err, "control: without the claim")
	})
}
