package landing

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// fillJournal writes journal entries at seqs straight onto v, naming rec,
// as other replicas' writes would have: a journal more than a segment long
// in a few dozen writes. The seqs left out are holes no test reads
// through (they are below the floor once a trim has run).
func fillJournal(t *testing.T, v Volume, rec Record, seqs ...uint64) {
	t.Helper()
	ctx := t.Context()
	data, err := json.Marshal(journalFormat{Format: 1, JournalEntry: JournalEntry{Module: rec.Module, Record: rec.ID, Replica: "filler"}})
	require.NoError(t, err)
	for _, seq := range seqs {
		p := path.Join(journalEntryDir(seq), journalEntry)
		if xv, ok := v.(ExclusiveVolume); ok {
			require.NoError(t, xv.CreateExclusive(ctx, p, data))
			continue
		}
		require.NoError(t, v.MkdirAll(ctx, journalEntryDir(seq)))
		require.NoError(t, v.WriteFile(ctx, p, data))
	}
}

// seqRange returns from, from+1, …, to-1.
func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s < to; s++ {
		out = append(out, s)
	}
	return out
}

// aheadClock is a clock a day and an hour past the volume's: every entry
// written by the test is older than the default KeepAge by it.
func aheadClock() clock.Clock {
	c := clock.NewMock()
	c.Set(time.Now().Add(DefaultJournalKeepAge + time.Hour))
	return c
}

// hiddenFloor hides the journal's floor markers: the reader a trim was
// not built for (the negative control), a wrapper any user can write.
type hiddenFloor struct{ Volume }

func (h hiddenFloor) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if name == journalFloorDir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return h.Volume.ReadDir(ctx, name)
}

// TestATailWhosePlaceWasTrimmedIsToldSoAndNotTheJournalsEnd: a trim removes
// the old whole segment (below the head's, older than KeepAge), writes the
// floor, keeps the head's segment; a tail from a place in the removed
// segment gets a *JournalTrimmedError naming the place and the floor,
// while a tail from the floor reads every kept entry and one at the head
// reads nothing, without error. Negative control: the read without the
// floor check (ReadJournal, what the tail was) answers the trimmed place
// with no entries and no error, exactly as it answers the journal's end.
func TestATailWhosePlaceWasTrimmedIsToldSoAndNotTheJournalsEnd(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		_, handle := k.open(t)
		w := newLanding(t, handle(), Options{Replica: "w"})
		seed, err := w.Land(ctx, "Seed", "1.0.0", testkit.ModuleArchive(t, "Seed", "1.0.0", 1))
		require.NoError(t, err)
		fillJournal(t, handle(), seed, append([]uint64{JournalSegment - 1}, seqRange(JournalSegment, JournalSegment+100)...)...)
		reader := newLanding(t, handle(), Options{Replica: "reader"})
		head, err := reader.JournalHead(ctx)
		require.NoError(t, err)
		require.EqualValues(t, JournalSegment+100, head)

		trimmer := newLanding(t, handle(), Options{Replica: "trimmer", Clock: aheadClock()})
		got, err := trimmer.TrimJournal(ctx, JournalTrim{KeepEntries: 64})
		require.NoError(t, err)
		assert.Equal(t, TrimmedJournal{Head: head, Floor: JournalSegment, Removed: 1}, got)
		floor, err := reader.JournalFloor(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, JournalSegment, floor)
		assert.NotContains(t, volumeTree(t, handle()), journalSegmentDir(1)+"/", "segment 0 is gone")
		assert.Contains(t, volumeTree(t, handle()), journalSegmentDir(JournalSegment)+"/", "the head's segment is kept")

		_, _, err = reader.TailJournal(ctx, 2, 1000)
		var trimmed *JournalTrimmedError
		require.ErrorAs(t, err, &trimmed)
		assert.Equal(t, JournalTrimmedError{From: 2, Floor: JournalSegment}, *trimmed)

		entries, next, err := reader.TailJournal(ctx, floor, 1000)
		require.NoError(t, err)
		assert.Len(t, entries, 100)
		assert.Equal(t, head, next)
		none, _, err := reader.TailJournal(ctx, head, 1000)
		require.NoError(t, err, "the end is the end")
		assert.Empty(t, none)

		again, err := trimmer.TrimJournal(ctx, JournalTrim{KeepEntries: 64})
		require.NoError(t, err)
		assert.Equal(t, TrimmedJournal{Head: head, Floor: JournalSegment}, again, "nothing more to remove")

		// Control: the read without the floor check takes the trim for the end.
		blind, at, err := reader.ReadJournal(ctx, 2, 1000)
		require.NoError(t, err)
		assert.Empty(t, blind)
		assert.EqualValues(t, 2, at, "control: stopped at the trimmed place as at the end")
	})
}

// TestATrimKeepsSegmentsYoungerThanKeepAgeAndTheEntriesItIsToldToKeep:
// with the trimmer's clock at the volume's present, nothing is removed
// (the default KeepAge, a day); with the default KeepEntries (two
// segments) nothing is either. Negative control: a clock a day ahead and
// KeepEntries 64 remove the segment.
func TestATrimKeepsSegmentsYoungerThanKeepAgeAndTheEntriesItIsToldToKeep(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		_, handle := k.open(t)
		w := newLanding(t, handle(), Options{Replica: "w"})
		seed, err := w.Land(ctx, "Seed", "1.0.0", testkit.ModuleArchive(t, "Seed", "1.0.0", 1))
		require.NoError(t, err)
		fillJournal(t, handle(), seed, append([]uint64{JournalSegment - 1}, seqRange(JournalSegment, JournalSegment+100)...)...)

		now := clock.NewMock()
		now.Set(time.Now())
		young, err := newLanding(t, handle(), Options{Clock: now}).TrimJournal(ctx, JournalTrim{KeepEntries: 64})
		require.NoError(t, err)
		assert.Zero(t, young.Removed, "younger than a day")
		byCount, err := newLanding(t, handle(), Options{Clock: aheadClock()}).TrimJournal(ctx, JournalTrim{})
		require.NoError(t, err)
		assert.Zero(t, byCount.Removed, "within the last two segments' entries")
		floor, err := w.JournalFloor(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 1, floor, "no floor written")

		old, err := newLanding(t, handle(), Options{Clock: aheadClock()}).TrimJournal(ctx, JournalTrim{KeepEntries: 64})
		require.NoError(t, err)
		assert.Equal(t, 1, old.Removed, "control: an old segment beyond the kept entries goes")
	})
}

// TestATrimWithBadOptionsIsRefusedWithATypedErrorAndRemovesNothing: every
// negative field, a KeepEntries below the walk's backlog and a KeepAge
// below an hour are *JournalTrimError naming the field; the journal is as
// before. Negative control: the same journal trims with good options.
func TestATrimWithBadOptionsIsRefusedWithATypedErrorAndRemovesNothing(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		_, handle := k.open(t)
		w := newLanding(t, handle(), Options{Replica: "w"})
		seed, err := w.Land(ctx, "Seed", "1.0.0", testkit.ModuleArchive(t, "Seed", "1.0.0", 1))
		require.NoError(t, err)
		fillJournal(t, handle(), seed, append([]uint64{JournalSegment - 1}, seqRange(JournalSegment, JournalSegment+100)...)...)
		trimmer := newLanding(t, handle(), Options{Clock: aheadClock()})
		before := volumeTree(t, handle())
		for _, c := range []struct {
			keep  JournalTrim
			field string
		}{
			{JournalTrim{KeepEntries: -1}, "KeepEntries"},
			{JournalTrim{KeepEntries: 63}, "KeepEntries"},
			{JournalTrim{KeepAge: -time.Second}, "KeepAge"},
			{JournalTrim{KeepAge: time.Minute}, "KeepAge"},
			{JournalTrim{MaxSegments: -3}, "MaxSegments"},
		} {
			_, err := trimmer.TrimJournal(ctx, c.keep)
			var bad *JournalTrimError
			require.ErrorAs(t, err, &bad, "%+v", c.keep)
			assert.Equal(t, c.field, bad.Field)
			assert.Contains(t, err.Error(), "landing.JournalTrim."+c.field)
			assert.Contains(t, err.Error(), "nothing was trimmed")
		}
		assert.Equal(t, before, volumeTree(t, handle()), "nothing removed")
		got, err := trimmer.TrimJournal(ctx, JournalTrim{KeepEntries: 64, KeepAge: MinJournalKeepAge})
		require.NoError(t, err)
		assert.Equal(t, 1, got.Removed, "control: good options trim")
	})
}

// TestTrimmingWhileReplicasPublishLosesNoJournalEntry: two replicas land
// 40 records while a third trims in a loop, the journal crossing the point
// where its first segment may go; then a replica whose own knowledge of
// the journal is from before the trim (its last claim was entry 1, so it
// would claim entry 2, free again) lands once more. Every record landed
// after the journal was filled is named by an entry a tail from the floor
// reads: the stale claim was taken back and made at the head. Negative
// control: a replica that cannot see the floor (its volume hides it)
// claims below the floor, and no tail ever reads that entry.
func TestTrimmingWhileReplicasPublishLosesNoJournalEntry(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		inner, handle := k.open(t)
		stale := newLanding(t, handle(), Options{Replica: "stale"})
		blind := newLanding(t, keepExclusive(hiddenFloor{handle()}, inner), Options{Replica: "blind"})
		seed, err := stale.Land(ctx, "Seed", "1.0.0", testkit.ModuleArchive(t, "Seed", "1.0.0", 1))
		require.NoError(t, err)
		_, err = blind.Land(ctx, "Blind", "1.0.0", testkit.ModuleArchive(t, "Blind", "1.0.0", 1))
		require.NoError(t, err)
		fillJournal(t, handle(), seed, append([]uint64{JournalSegment - 1}, seqRange(JournalSegment, JournalSegment+40)...)...)

		trimmer := newLanding(t, handle(), Options{Replica: "trimmer", Clock: aheadClock()})
		writers := []*ModuleLanding{newLanding(t, handle(), Options{Replica: "a"}), newLanding(t, handle(), Options{Replica: "b"})}
		const each = 20
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			written []string
			removed int
		)
		done := make(chan struct{})
		trimmed := make(chan error, 1)
		go func() {
			for {
				got, err := trimmer.TrimJournal(ctx, JournalTrim{KeepEntries: 64})
				if err != nil {
					trimmed <- err
					return
				}
				mu.Lock()
				removed += got.Removed
				mu.Unlock()
				select {
				case <-done:
					trimmed <- nil
					return
				default:
				}
			}
		}()
		for _, w := range writers {
			for i := range each {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m := fmt.Sprintf("T%s%02d", w.Replica(), i)
					rec, err := w.Land(ctx, m, "1.0.0", testkit.ModuleArchive(t, m, "1.0.0", 1))
					assert.NoError(t, err)
					mu.Lock()
					written = append(written, rec.ID)
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
		close(done)
		require.NoError(t, testkit.Receive(t, trimmed, "the trimming loop ending"))
		t.Logf("segments removed while the replicas landed: %d", removed)
		if removed == 0 { // the loop ended before the journal allowed it
			got, err := trimmer.TrimJournal(ctx, JournalTrim{KeepEntries: 64})
			require.NoError(t, err)
			removed = got.Removed
		}
		require.Equal(t, 1, removed, "segment 0 trimmed")

		late, err := stale.Land(ctx, "Late", "1.0.0", testkit.ModuleArchive(t, "Late", "1.0.0", 1))
		require.NoError(t, err)
		written = append(written, late.ID)
		lost, err := blind.Land(ctx, "Lost", "1.0.0", testkit.ModuleArchive(t, "Lost", "1.0.0", 1))
		require.NoError(t, err)

		floor, err := trimmer.JournalFloor(ctx)
		require.NoError(t, err)
		require.EqualValues(t, JournalSegment, floor)
		entries, _, err := trimmer.TailJournal(ctx, floor, 10_000)
		require.NoError(t, err)
		var tailed []string
		for _, e := range entries {
			tailed = append(tailed, e.Record)
		}
		missing := slices.DeleteFunc(slices.Clone(written), func(id string) bool { return slices.Contains(tailed, id) })
		assert.Empty(t, missing, "every record landed is on the tail")
		assert.Len(t, written, 2*each+1)
		// Control: the replica blind to the floor claimed below it.
		assert.NotContains(t, tailed, lost.ID, "control: a claim below the floor is never tailed")
		under, _, err := trimmer.ReadJournal(ctx, 3, 1)
		require.NoError(t, err)
		require.Len(t, under, 1)
		assert.Equal(t, lost.ID, under[0].Record, "control: the blind replica's entry is below the floor")
		assert.False(t, slices.ContainsFunc(entries, func(e JournalEntry) bool { return e.Seq < floor }))
	})
}

// stalledRemoval holds every RemoveAll until its context ends, as a
// volume that stops answering mid-trim does, and says when one began.
type stalledRemoval struct {
	Volume
	began chan struct{}
}

func (s stalledRemoval) RemoveAll(ctx context.Context, name string) error {
	select {
	case s.began <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return &fs.PathError{Op: "removeall", Path: name, Err: ctx.Err()}
}

// TestATrimOnAVolumeThatStopsAnsweringEndsAtItsBudgetNamingWhatItWaitedOn:
// a trim whose segment removal never returns gives up once
// JournalTrimBudget has passed on the landing's clock, with a *WaitError
// naming the removal and the trim; the floor it wrote first stays, so a
// tail from the segment is still told it was trimmed. Negative control: a
// moment before the budget the trim has not returned.
func TestATrimOnAVolumeThatStopsAnsweringEndsAtItsBudgetNamingWhatItWaitedOn(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		inner, handle := k.open(t)
		w := newLanding(t, handle(), Options{Replica: "w"})
		seed, err := w.Land(ctx, "Seed", "1.0.0", testkit.ModuleArchive(t, "Seed", "1.0.0", 1))
		require.NoError(t, err)
		fillJournal(t, handle(), seed, append([]uint64{JournalSegment - 1}, seqRange(JournalSegment, JournalSegment+100)...)...)

		clk := clock.NewMock()
		clk.Set(time.Now().Add(DefaultJournalKeepAge + time.Hour))
		stalled := stalledRemoval{Volume: handle(), began: make(chan struct{}, 1)}
		trimmer := newLanding(t, keepExclusive(stalled, inner), Options{Replica: "trimmer", Clock: clk})
		done := make(chan error, 1)
		go func() {
			_, err := trimmer.TrimJournal(context.Background(), JournalTrim{KeepEntries: 64})
			done <- err
		}()
		testkit.Receive(t, stalled.began, "the trim's removal starting")
		clk.Add(JournalTrimBudget - time.Millisecond)
		select {
		case err := <-done:
			t.Fatalf("control: the trim returned before its budget: %v", err)
		default:
		}
		clk.Add(time.Millisecond)
		err = testkit.Receive(t, done, "the trim giving up at its budget")
		var we *WaitError
		require.ErrorAs(t, err, &we)
		assert.Contains(t, we.Waiting, "remove journal/0000000000")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), "trimming the journal")

		_, _, err = w.TailJournal(ctx, 2, 10)
		var trimmed *JournalTrimmedError
		assert.ErrorAs(t, err, &trimmed, "the floor was written before the removal")
	})
}

// TestATrimRemovesAtMostMaxSegmentsOldestFirstAndTheNextCallGoesOn: with
// two old segments and MaxSegments 1, a call removes the oldest, raises
// the floor to the next and says more could go; the next call removes the
// other. Negative control: the default (16) removes both at once.
func TestATrimRemovesAtMostMaxSegmentsOldestFirstAndTheNextCallGoesOn(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		_, handle := k.open(t)
		w := newLanding(t, handle(), Options{Replica: "w"})
		seed, err := w.Land(ctx, "Seed", "1.0.0", testkit.ModuleArchive(t, "Seed", "1.0.0", 1))
		require.NoError(t, err)
		seqs := append([]uint64{JournalSegment - 1, 2*JournalSegment - 1}, seqRange(2*JournalSegment, 2*JournalSegment+100)...)
		fillJournal(t, handle(), seed, seqs...)
		trimmer := newLanding(t, handle(), Options{Clock: aheadClock()})

		first, err := trimmer.TrimJournal(ctx, JournalTrim{KeepEntries: 64, MaxSegments: 1})
		require.NoError(t, err)
		assert.Equal(t, TrimmedJournal{Head: 2*JournalSegment + 100, Floor: JournalSegment, Removed: 1, Leftover: true}, first)
		second, err := trimmer.TrimJournal(ctx, JournalTrim{KeepEntries: 64, MaxSegments: 1})
		require.NoError(t, err)
		assert.Equal(t, TrimmedJournal{Head: 2*JournalSegment + 100, Floor: 2 * JournalSegment, Removed: 1}, second)
		// Two trims wrote two markers; only the floor's stays (every read of
		// the floor lists them). Control: without dropLowerFloors both stay
		// (run: [00000000000000004096 00000000000000008192]).
		markers, err := handle().ReadDir(ctx, journalFloorDir)
		require.NoError(t, err)
		var names []string
		for _, m := range markers {
			names = append(names, m.Name())
		}
		assert.Equal(t, []string{path.Base(journalFloorPath(2 * JournalSegment))}, names, "one floor marker, the newest")

		// Control: the default bound takes both in one call.
		_, other := k.open(t)
		w2 := newLanding(t, other(), Options{Replica: "w"})
		seed2, err := w2.Land(ctx, "Seed", "1.0.0", testkit.ModuleArchive(t, "Seed", "1.0.0", 1))
		require.NoError(t, err)
		fillJournal(t, other(), seed2, seqs...)
		both, err := newLanding(t, other(), Options{Clock: aheadClock()}).TrimJournal(ctx, JournalTrim{KeepEntries: 64})
		require.NoError(t, err)
		assert.Equal(t, 2, both.Removed, "control: both segments in one call")
	})
}
