package landing

import (
	"bytes"
	"context"
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
// With replace set it renames over an existing claim, as a volume without
// an atomic "rename unless it exists" would (the negative control); the
// removal and rename then run one claim at a time, so that the second claim
// always replaces the first rather than racing its removal.
type claimRace struct {
	Volume
	arrived *sync.WaitGroup
	replace bool
	one     *sync.Mutex
}

func (v claimRace) Rename(ctx context.Context, oldname, newname string) error {
	if path.Base(path.Dir(newname)) == "versions" {
		v.arrived.Done()
		v.arrived.Wait() // bounded: both landings reach their claim without waiting on anything else
		if v.replace {
			v.one.Lock()
			defer v.one.Unlock()
			_ = v.Volume.RemoveAll(ctx, newname)
		}
	}
	return v.Volume.Rename(ctx, oldname, newname)
}

func TestOfConcurrentLandingsOnTwoReplicasExactlyOneClaimsTheVersion(t *testing.T) {
	run := func(t *testing.T, replace bool) (created, conflicts int) {
		root := t.TempDir()
		var arrived sync.WaitGroup
		arrived.Add(2)
		var one sync.Mutex
		replicas := []*ModuleLanding{
			newLanding(t, claimRace{Volume: DirVolume(root), arrived: &arrived, replace: replace, one: &one}, Options{Replica: "a"}),
			newLanding(t, claimRace{Volume: DirVolume(root), arrived: &arrived, replace: replace, one: &one}, Options{Replica: "b"}),
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
					created++
				case assert.ErrorAs(t, err, &conflict):
					conflicts++
				}
			}()
		}
		wg.Wait()
		return created, conflicts
	}
	created, conflicts := run(t, false)
	assert.Equal(t, 1, created, "exactly one landing claims the version")
	assert.Equal(t, 1, conflicts, "the other is told the version is taken")

	t.Run("negative control: a claim that can be replaced lets both land", func(t *testing.T) {
		created, _ := run(t, true)
		assert.Equal(t, 2, created)
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
	clk.Set(clk.Now().Add(time.Minute))
	v2, err := l.Land(ctx, "Crm", "2.0.0", testkit.ModuleArchive(t, "Crm", "2.0.0", 1))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{v1.Generation, v2.Generation, recent}, testkit.Generations(t, root, "Crm"),
		"the old orphan is removed; referenced generations and a recent orphan (a landing on another replica may be about to record it) stay")

	// Control: past its grace the recent orphan goes too; v1 stays shelvable.
	clk.Set(clk.Now().Add(GenerationGrace))
	v3, err := l.Land(ctx, "Crm", "3.0.0", testkit.ModuleArchive(t, "Crm", "3.0.0", 1))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{v1.Generation, v2.Generation, v3.Generation}, testkit.Generations(t, root, "Crm"))
	_, err = l.Shelve(ctx, "Crm", "1.0.0")
	require.NoError(t, err)
}
