package landing

import (
	"context"
	"fmt"
	"io"
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// heldRecordCommit holds the commit of module key's records (the rename
// into place, or on object storage the conditional create) until release
// is closed: a commit that a slow share or a stalled PUT keeps waiting.
type heldRecordCommit struct {
	Volume
	key     string
	entered chan struct{}
	release chan struct{}
}

func (v *heldRecordCommit) held(name string) bool {
	return path.Dir(name) == recordsDir(v.key) && path.Base(name)[0] != '.'
}

func (v *heldRecordCommit) wait(name string) {
	if v.held(name) {
		close(v.entered)
		<-v.release
	}
}

func (v *heldRecordCommit) Rename(ctx context.Context, oldname, newname string) error {
	v.wait(newname)
	return v.Volume.Rename(ctx, oldname, newname)
}

type heldRecordCommitX struct {
	*heldRecordCommit
	x ExclusiveVolume
}

func (v heldRecordCommitX) CreateExclusive(ctx context.Context, name string, data []byte) error {
	v.wait(name)
	return v.x.CreateExclusive(ctx, name, data)
}

func (v heldRecordCommitX) WriteFrom(ctx context.Context, name string, r io.Reader) error {
	return writeStream(ctx, v.Volume, name, r)
}

// A record whose commit finishes after more entries than a full walk
// leaves behind it (walkBacklog, 64) were claimed on the journal is seen
// by the next pass of a replica that walked meanwhile: its writer, finding
// itself overtaken, claims a second entry for it at the head. Before, the
// walk placed the next pass 64 entries before the head it read, past the
// slow commit's entry, and no pass read it again: the record stayed
// unserved (by that replica's tail too, which starts at the walk's place)
// until the hourly full walk. Control run (the writer's check removed):
// the second pass does not serve Slow, on both volumes.
func TestARecordCommittedAfterAWalkLeftItsJournalEntryBehindIsSeenByTheNextPass(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		inner, handle := k.open(t)
		hv := &heldRecordCommit{Volume: inner, key: moduleKey("Slow"), entered: make(chan struct{}), release: make(chan struct{})}
		var slowVolume Volume = hv
		if x, ok := inner.(ExclusiveVolume); ok {
			slowVolume = heldRecordCommitX{heldRecordCommit: hv, x: x}
		}
		slow := newLanding(t, slowVolume, Options{Replica: "slow"})
		busy := newLanding(t, handle(), Options{Replica: "busy"})
		walker := newLanding(t, handle(), Options{Replica: "walker"})

		landed := make(chan error, 1)
		go func() {
			_, err := slow.Land(ctx, "Slow", "1.0.0", testkit.ModuleArchive(t, "Slow", "1.0.0", 1))
			landed <- err
		}()
		testkit.Receive(t, hv.entered, "the slow landing's commit starting")
		for i := range walkBacklog + 1 {
			m := fmt.Sprintf("Busy%02d", i)
			_, err := busy.Land(ctx, m, "1.0.0", testkit.ModuleArchive(t, m, "1.0.0", 1))
			require.NoError(t, err)
		}
		first, err := walker.ReconcileChanges(ctx, Activation{})
		require.NoError(t, err)
		require.NotContains(t, servedVersions(first), "Slow", "not committed when the walk listed it")

		close(hv.release)
		require.NoError(t, testkit.Receive(t, landed, "the slow landing"))
		second, err := walker.ReconcileChanges(ctx, first)
		require.NoError(t, err)
		assert.Equal(t, "1.0.0", servedVersions(second)["Slow"], "the pass after the commit serves it")
		assert.Equal(t, walkBacklog+2, len(second.Modules), "every module served")
	})
}
