package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/registry/landing/volumetest"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// fillJournal writes journal entries at seqs straight onto v, each naming
// rec (a no-op for a replica that absorbs it), as other replicas' writes
// would: a journal longer than a segment in a hundred writes. The seqs left
// out are holes inside the segment the test then trims.
func fillJournal(t *testing.T, v landing.Volume, rec landing.Record, seqs ...uint64) {
	t.Helper()
	ctx := t.Context()
	data, err := json.Marshal(map[string]any{"format": 1, "module": rec.Module, "record": rec.ID, "replica": "filler"})
	require.NoError(t, err)
	for _, seq := range seqs {
		dir := path.Join("journal", fmt.Sprintf("%010d", seq/landing.JournalSegment), fmt.Sprintf("%020d", seq))
		if xv, ok := v.(landing.ExclusiveVolume); ok {
			require.NoError(t, xv.CreateExclusive(ctx, path.Join(dir, "entry.json"), data))
			continue
		}
		require.NoError(t, v.MkdirAll(ctx, dir))
		require.NoError(t, v.WriteFile(ctx, path.Join(dir, "entry.json"), data))
	}
}

// floorHidden hides the journal's floor: the tail as it was before trims
// existed, reading until the first missing entry (the negative control),
// through a volume wrapper any user can write.
type floorHidden struct{ landing.Volume }

func (h floorHidden) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if name == "journal/floor" {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return h.Volume.ReadDir(ctx, name)
}

// warnings keeps the Warn lines a service logs.
type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, r.Message)
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }
func (w *warnings) saw(part string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.lines {
		if strings.Contains(l, part) {
			return true
		}
	}
	return false
}

// TestAReplicaBehindAJournalTrimReDerivesAndMissesNoRecordWhileOneAtTheHeadIsUntouched:
// replica b's tail stands at the journal's second entry; the journal grows
// past a segment, a trim removes the first segment, and replica a lands
// Late. One journal period later b's tail finds its place trimmed (not the
// end), says so at Warn, re-derives by a full walk and serves Late; its
// tail then goes on from past the floor and serves the next landing with
// no further derivation. Replica c, whose tail was at the head, serves
// Late from its tail with no derivation at all. Negative control: replica
// d, behind like b but reading the journal without its floor (the tail
// before this change), takes the trimmed place for the journal's end and
// still does not serve Late or Later three journal periods later — it would until
// its reconciliation, minutes on.
func TestAReplicaBehindAJournalTrimReDerivesAndMissesNoRecordWhileOneAtTheHeadIsUntouched(t *testing.T) {
	volumetest.ForEach(t, func(t *testing.T, k volumetest.Kind) {
		inner, replica := k.Open(t)
		la := newLanding(t, replica(), landing.Options{Replica: "a"})
		seed, err := la.Land(t.Context(), "Seed", "1.0.0", testkit.ModuleArchive(t, "Seed", "1.0.0", 2))
		require.NoError(t, err)
		clk := rxtest.NewClock()
		warned := &warnings{}
		served := func(v landing.Volume, name string, log *slog.Logger) *ServedActivation {
			s := NewServedActivation(newLanding(t, v, landing.Options{Replica: name}), ServedOptions{Clock: clk, Logger: log})
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
				defer cancel()
				require.NoError(t, s.Close(ctx))
			})
			read(t, s)
			tailedNow(t, s, clk)
			return s
		}
		b := served(replica(), "b", slog.New(warned))
		d := served(volumetest.KeepExclusive(floorHidden{replica()}, inner), "d", quietLogger())

		fillJournal(t, replica(), seed, append([]uint64{landing.JournalSegment - 1}, seqRange(landing.JournalSegment, landing.JournalSegment+100)...)...)
		c := served(replica(), "c", quietLogger())
		require.GreaterOrEqual(t, tailPlace(c), uint64(landing.JournalSegment), "c's tail is in the head's segment")

		ahead := clock.NewMock()
		ahead.Set(time.Now().Add(landing.DefaultJournalKeepAge + time.Hour))
		trimmed, err := newLanding(t, replica(), landing.Options{Replica: "trimmer", Clock: ahead}).TrimJournal(t.Context(), landing.JournalTrim{KeepEntries: 64})
		require.NoError(t, err)
		require.Equal(t, 1, trimmed.Removed)
		require.EqualValues(t, landing.JournalSegment, trimmed.Floor)
		land(t, la, "Late", "1.0.0")

		clk.Advance(b.journalPeriod)
		tailedNow(t, c, clk)
		assert.Equal(t, "1.0.0", servedVersions(read(t, c).Activation())["Late"], "c tails it")
		assert.EqualValues(t, 1, c.Derivations(), "c is untouched by the trim")

		eventually(t, func() bool { return servedVersions(read(t, b).Activation())["Late"] == "1.0.0" }, "b serving Late after re-deriving")
		settle(t, b)
		assert.EqualValues(t, 2, b.Derivations(), "b re-derived once")
		assert.True(t, warned.saw("behind a trim of the journal"), "b said why at Warn")
		assert.GreaterOrEqual(t, tailPlace(b), uint64(landing.JournalSegment), "b's tail is past the floor")

		land(t, la, "Later", "1.0.0")
		clk.Advance(b.journalPeriod)
		tailedNow(t, b, clk)
		assert.Equal(t, "1.0.0", servedVersions(read(t, b).Activation())["Later"], "b tails again")
		assert.EqualValues(t, 2, b.Derivations(), "no further derivation")

		// Control: without the floor the trimmed place reads as the end.
		clk.Advance(d.journalPeriod)
		tailedNow(t, d, clk)
		got := servedVersions(read(t, d).Activation())
		assert.NotContains(t, got, "Late", "control: the tail without the floor misses Late")
		assert.NotContains(t, got, "Later")
		assert.EqualValues(t, 1, d.Derivations(), "control: nothing re-derived")
		assert.Less(t, clk.Elapsed(), DefaultReconcile, "well before the reconciliation")
	})
}

// tailPlace is the next journal entry s's tail reads.
func tailPlace(s *ServedActivation) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.journalNext
}

// seqRange returns from, from+1, …, to-1.
func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s < to; s++ {
		out = append(out, s)
	}
	return out
}
