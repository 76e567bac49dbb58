package registry

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// staleVolume holds, once armed, the commit of a record into recordsOf
// before it happens and a listing of recordsOf after it was read: a
// re-read that saw the directory before a commit reports after it.
type staleVolume struct {
	landing.Volume
	recordsOf string

	mu            sync.Mutex
	holdCommit    bool
	holdListing   bool
	commitEntered chan struct{}
	commitGate    chan struct{}
	listEntered   chan struct{}
	listGate      chan struct{}
}

func (v *staleVolume) Rename(ctx context.Context, oldname, newname string) error {
	v.mu.Lock()
	hold := v.holdCommit && path.Dir(newname) == v.recordsOf && strings.HasSuffix(newname, ".json")
	if hold {
		v.holdCommit = false
	}
	v.mu.Unlock()
	if hold {
		v.commitEntered <- struct{}{}
		select {
		case <-v.commitGate:
		case <-ctx.Done():
			return &fs.PathError{Op: "rename", Path: newname, Err: ctx.Err()}
		}
	}
	return v.Volume.Rename(ctx, oldname, newname)
}

func (v *staleVolume) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	entries, err := v.Volume.ReadDir(ctx, name)
	v.mu.Lock()
	hold := v.holdListing && name == v.recordsOf
	if hold {
		v.holdListing = false
	}
	v.mu.Unlock()
	if hold {
		v.listEntered <- struct{}{}
		select {
		case <-v.listGate:
		case <-ctx.Done():
		}
	}
	return entries, err
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testkit.Bound):
		t.Fatalf("%s did not happen within %s", what, testkit.Bound)
	}
}

// TestAJournalTailThatReadAModuleBeforeItsFirstCommitDoesNotUnserveItAfterwards:
// the tail reads a journal entry before its record's commit (the entry is
// written first), re-reads the module and finds no record; meanwhile the
// commit lands and this replica serves it (its own write's patch). The
// tail's late "no record" must not take the module out of the snapshot:
// a read that found nothing is older than the record held. Negative
// control: without the fix in patchedSnap (a not-found patch removed a
// held module), the module was not served after the tail's round, until
// the next round re-read it (a published module answering 404 for up to
// JournalPeriod).
func TestAJournalTailThatReadAModuleBeforeItsFirstCommitDoesNotUnserveItAfterwards(t *testing.T) {
	root := t.TempDir()
	v := &staleVolume{
		Volume: landing.DirVolume(root), recordsOf: "modules/fresh/records",
		commitEntered: make(chan struct{}, 1), commitGate: make(chan struct{}),
		listEntered: make(chan struct{}, 1), listGate: make(chan struct{}),
	}
	la := newLanding(t, v, landing.Options{Replica: "a"})
	clk := rxtest.NewClock()
	a := newJournalServed(t, la, clk, newMem(t))
	land(t, a, "seed", "1.0.0")
	read(t, a)
	feedLive(t, a)
	tailedNow(t, a, clk)

	v.mu.Lock()
	v.holdCommit = true
	v.mu.Unlock()
	landed := make(chan error, 1)
	go func() {
		_, err := a.Land(context.Background(), "fresh", "1.0.0", testkit.ModuleArchive(t, "fresh", "1.0.0", 2))
		landed <- err
	}()
	waitFor(t, v.commitEntered, "the record's commit") // its journal entry is claimed

	v.mu.Lock()
	v.holdListing = true
	v.mu.Unlock()
	clk.Advance(a.journalPeriod)
	waitFor(t, v.listEntered, "the tail's re-read of the module") // it saw no record

	close(v.commitGate)
	select {
	case err := <-landed:
		require.NoError(t, err)
	case <-time.After(testkit.Bound):
		t.Fatalf("the landing did not return within %s", testkit.Bound)
	}
	require.Equal(t, "1.0.0", servedVersions(read(t, a).Activation())["fresh"], "served after its own write")

	close(v.listGate)
	tailedNow(t, a, clk)
	assert.Equal(t, "1.0.0", servedVersions(read(t, a).Activation())["fresh"],
		"still served after the tail's stale re-read")
}
