package landing

import (
	"bytes"
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// TestARecordWrittenByAReplicaWhoseClockIsAnHourBehindSortsAfterTheRecordsItSaw:
// record order is the module's sequence, claimed from the records on the
// volume, not the writer's clock. Negative control: the records' stamps
// (the order before sequence numbers) put the uninstall before the landing
// it ends, which would leave the module served.
func TestARecordWrittenByAReplicaWhoseClockIsAnHourBehindSortsAfterTheRecordsItSaw(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		_, handle := k.open(t)
		now := clock.NewMock()
		now.Set(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
		behind := clock.NewMock()
		behind.Set(now.Now().Add(-time.Hour))
		a := newLanding(t, handle(), Options{Replica: "a", Clock: now})
		b := newLanding(t, handle(), Options{Replica: "b", Clock: behind})

		landed, err := a.Land(ctx, "Skew", "2.0.0", testkit.ModuleArchive(t, "Skew", "2.0.0", 1))
		require.NoError(t, err)
		ended, err := b.Uninstall(ctx, "Skew")
		require.NoError(t, err)

		assert.Greater(t, ended.ID, landed.ID, "the uninstall sorts after the landing it saw")
		assert.Equal(t, landed.Seq()+1, ended.Seq())
		for _, l := range []*ModuleLanding{a, b} {
			act, err := l.Activation(ctx)
			require.NoError(t, err)
			assert.NotContains(t, servedVersions(act), "Skew", "%s: the uninstall decides", l.Replica())
		}
		// Control: by the writers' stamps alone, the uninstall is older.
		assert.Less(t, ended.ID[22:], landed.ID[22:], "control: the stamps order the uninstall first")
	})
}

// TestEveryRecordWriteIsOnTheJournalAndATailReadsOnlyTheNewEntries: every
// record write, from any replica, claims one journal entry; sequence numbers
// have no holes and no duplicates under concurrent writers; a tail costs
// one volume operation per new entry plus one.
func TestEveryRecordWriteIsOnTheJournalAndATailReadsOnlyTheNewEntries(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		_, handle := k.open(t)
		counted, cv := counting(handle())
		a := newLanding(t, handle(), Options{Replica: "a"})
		b := newLanding(t, handle(), Options{Replica: "b"})
		reader := newLanding(t, counted, Options{Replica: "reader"})

		head, err := reader.JournalHead(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, head, "an empty journal starts at 1")

		const each = 12
		var wg sync.WaitGroup
		written := make(chan Record, 2*each)
		for _, l := range []*ModuleLanding{a, b} {
			for i := range each {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m := fmt.Sprintf("J%s%02d", l.Replica(), i)
					rec, err := l.Land(ctx, m, "1.0.0", testkit.ModuleArchive(t, m, "1.0.0", 1))
					assert.NoError(t, err)
					written <- rec
				}()
			}
		}
		wg.Wait()
		close(written)
		want := map[string]string{}
		for r := range written {
			want[r.ID] = r.Module
		}

		before := cv.Ops()
		entries, next, err := reader.ReadJournal(ctx, head, 1000)
		require.NoError(t, err)
		cost := cv.Ops().Sub(before)
		require.Len(t, entries, 2*each)
		assert.EqualValues(t, head+2*each, next)
		got := map[string]string{}
		for i, e := range entries {
			assert.EqualValues(t, head+uint64(i), e.Seq, "no holes")
			got[e.Record] = e.Module
		}
		assert.Equal(t, want, got, "one entry per record written, naming it")
		assert.EqualValues(t, 2*each+1, cost.Total(), "one read per entry and one for the end")

		before = cv.Ops()
		none, again, err := reader.ReadJournal(ctx, next, 1000)
		require.NoError(t, err)
		assert.Empty(t, none)
		assert.Equal(t, next, again)
		assert.EqualValues(t, 1, cv.Ops().Sub(before).Total(), "a tail with nothing new is one operation")

		head, err = b.JournalHead(ctx)
		require.NoError(t, err)
		assert.Equal(t, next, head, "the head a listing finds is where the tail stopped")
	})
}

// A journal entry larger than its bound is read as an unreadable one (an
// entry with no module, which sends a reconciliation to a full walk) and
// the journal moves past it, rather than failing every read at that place:
// a replica would never tail past it. Negative control (run): with
// readJournal failing on the volume's refusal, ReadJournal errors at
// entry 2 on every kind.
func TestAJournalEntryLargerThanItsBoundIsUnreadableAndTheJournalMovesPastIt(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		v := k.openVolume(t)
		rec := Record{Module: "Big", ID: newRecordIDFromStamp(1, newStamp(time.Now()))}
		fillJournal(t, v, rec, 1, 2, 3)
		require.NoError(t, v.WriteFile(ctx, path.Join(journalEntryDir(2), journalEntry), bytes.Repeat([]byte(" "), maxEntryBytes+1)))
		l := newLanding(t, v, Options{Replica: "r"})

		entries, next, err := l.ReadJournal(ctx, 1, 10)
		require.NoError(t, err)
		require.Len(t, entries, 3)
		assert.EqualValues(t, 4, next)
		assert.Equal(t, []string{"Big", "", "Big"}, []string{entries[0].Module, entries[1].Module, entries[2].Module})
		assert.EqualValues(t, 2, entries[1].Seq)
	})
}
