package landing

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"time"
)

// Trimming the journal. The journal grows by one entry per record write;
// TrimJournal removes whole old segments. A reader must then tell a
// trimmed past from the journal's end, since both read as a missing
// entry: the trim first writes a floor marker, journal/floor/<seq>, naming
// the first sequence number it keeps (a segment's first), and only then
// removes the segments below it. Markers are never lowered: each trim adds
// its own and the floor is the highest listed, so two trims at once cannot
// leave a floor below a removed segment. Once its segments are gone, a
// trim removes the markers below its floor (they say nothing more, and
// every read of the floor lists them).
//
//   - A tail (TailJournal) that stops at a missing entry reads the floor
//     after that read: if the entry is below the floor, its segment was
//     removed or is being removed (the marker came first), and the tail
//     answers a *JournalTrimmedError, never the end. The registry's tailer
//     re-derives then (a full walk, as on any gap in the journal).
//   - ReconcileChanges needs no marker: it reads the journal's head first,
//     and a read that stops below it walks every module.
//   - A writer claims the next sequence number from what it last knew of
//     the journal; a number below the floor is free again once its segment
//     is removed. A claim made from that knowledge (not from a listing of
//     the journal's head in the same call) reads the floor after it, and a
//     claim below it is taken back and made again at the head: an entry
//     below the floor would never be tailed.
//   - A trim keeps the head's segment and at least KeepEntries (at least
//     journalKeepMin) entries before the head it reads, so the place a full
//     walk or a starting tail leaves (64 entries before the head) is above
//     the floor unless the trim read a newer head while the walk ran; such
//     a tail meets the floor and walks once more, missing nothing.
const (
	journalFloorDir = "journal/floor"
	// journalKeepMin is the fewest entries before the head a trim keeps:
	// the backlog a full walk (walkBacklog) and a starting tail leave.
	journalKeepMin = walkBacklog
)

// Defaults and bounds of JournalTrim.
const (
	// DefaultJournalKeepAge is JournalTrim.KeepAge when zero.
	DefaultJournalKeepAge = 24 * time.Hour
	// MinJournalKeepAge is the least KeepAge accepted: a replica whose tail
	// runs (every few seconds) and whose snapshot is re-derived on its
	// cadence (minutes) has passed every entry older than this, and
	// ReconcileChanges walks every module this often anyway; a replica
	// further behind re-derives by a full walk, and misses nothing.
	MinJournalKeepAge = time.Hour
	// DefaultJournalKeepEntries is JournalTrim.KeepEntries when zero.
	DefaultJournalKeepEntries = 2 * JournalSegment
	// DefaultJournalTrimSegments is JournalTrim.MaxSegments when zero.
	DefaultJournalTrimSegments = 16
	// JournalTrimBudget bounds one TrimJournal call, on Options.Clock.
	JournalTrimBudget = 2 * time.Minute
)

// JournalTrim says what TrimJournal keeps. The zero value is the safe
// default: a day of entries, at least two segments, 16 segments at most
// removed per call.
type JournalTrim struct {
	// KeepAge keeps every segment whose newest entry was written less than
	// this long ago (by the entry's modification time on the volume and
	// Options.Clock). Zero: DefaultJournalKeepAge; at least MinJournalKeepAge.
	KeepAge time.Duration
	// KeepEntries keeps at least this many entries before the journal's
	// head. Zero: DefaultJournalKeepEntries; at least 64.
	KeepEntries int
	// MaxSegments bounds the segments one call removes (each a
	// JournalSegment entries). Zero: DefaultJournalTrimSegments.
	MaxSegments int
}

// JournalTrimError reports a JournalTrim that TrimJournal refuses; nothing
// is removed.
type JournalTrimError struct {
	Field  string // "KeepAge", "KeepEntries" or "MaxSegments"
	Value  int64
	Reason string
}

func (e *JournalTrimError) Error() string {
	return fmt.Sprintf("registry: landing.JournalTrim.%s is %d: %s; nothing was trimmed", e.Field, e.Value, e.Reason)
}

// JournalTrimmedError reports a read of the journal from a place whose
// entries a trim removed: the entries from From up to Floor are gone, and
// the reader may have missed writes there. It must re-derive (a full
// walk), not take the place for the journal's end.
type JournalTrimmedError struct {
	From  uint64 // the entry the read stopped at, missing
	Floor uint64 // the first entry the journal keeps
}

func (e *JournalTrimmedError) Error() string {
	return fmt.Sprintf("registry: journal entry %d was trimmed (the journal keeps entries from %d on): the entries since it cannot be read, re-derive by a full walk", e.From, e.Floor)
}

// TrimmedJournal is what a TrimJournal call did.
type TrimmedJournal struct {
	Head     uint64 // the journal's head when the trim read it
	Floor    uint64 // the first entry kept now (1: nothing was ever trimmed)
	Removed  int    // segments removed by this call
	Leftover bool   // more segments could go: MaxSegments stopped this call
}

func (o JournalTrim) checked() (JournalTrim, error) {
	switch {
	case o.KeepAge < 0:
		return o, &JournalTrimError{Field: "KeepAge", Value: int64(o.KeepAge), Reason: "it must not be negative (zero takes " + DefaultJournalKeepAge.String() + ")"}
	case o.KeepAge > 0 && o.KeepAge < MinJournalKeepAge:
		return o, &JournalTrimError{Field: "KeepAge", Value: int64(o.KeepAge), Reason: "it must be at least " + MinJournalKeepAge.String() + " (replicas still reading younger entries would re-derive)"}
	case o.KeepEntries < 0:
		return o, &JournalTrimError{Field: "KeepEntries", Value: int64(o.KeepEntries), Reason: fmt.Sprintf("it must not be negative (zero takes %d)", DefaultJournalKeepEntries)}
	case o.KeepEntries > 0 && o.KeepEntries < journalKeepMin:
		return o, &JournalTrimError{Field: "KeepEntries", Value: int64(o.KeepEntries), Reason: fmt.Sprintf("it must be at least %d (the entries a full walk leaves to read before the head)", journalKeepMin)}
	case o.MaxSegments < 0:
		return o, &JournalTrimError{Field: "MaxSegments", Value: int64(o.MaxSegments), Reason: fmt.Sprintf("it must not be negative (zero takes %d)", DefaultJournalTrimSegments)}
	}
	if o.KeepAge == 0 {
		o.KeepAge = DefaultJournalKeepAge
	}
	if o.KeepEntries == 0 {
		o.KeepEntries = DefaultJournalKeepEntries
	}
	if o.MaxSegments == 0 {
		o.MaxSegments = DefaultJournalTrimSegments
	}
	return o, nil
}

// TrimJournal removes the journal's oldest whole segments that keep
// allows: below the segment holding the entry KeepEntries before the
// head, each with its newest entry older than KeepAge, at most MaxSegments
// of them, oldest first. It writes the floor marker before removing
// anything (see above), so a replica whose place is in a removed segment
// re-derives instead of missing writes, and one at the head is untouched.
// It runs on one read slot, within JournalTrimBudget on Options.Clock (and
// ctx); an interrupted trim leaves the floor written and some segments
// below it, which the next call removes. Writes may run meanwhile. Bad
// options are a *JournalTrimError and remove nothing.
func (l *ModuleLanding) TrimJournal(ctx context.Context, keep JournalTrim) (TrimmedJournal, error) {
	keep, err := keep.checked()
	if err != nil {
		return TrimmedJournal{}, err
	}
	ctx, cancel := l.clk.WithTimeout(ctx, JournalTrimBudget)
	defer cancel()
	var out TrimmedJournal
	err = l.onReadPool(ctx, "journal trim", func() error {
		var err error
		out, err = l.trimJournal(ctx, keep)
		return err
	})
	if err != nil {
		// A *WaitError inside names the operation waited on; the budget
		// that ended it is JournalTrimBudget or the caller's.
		return out, fmt.Errorf("registry: trimming the journal (budget %s): %w", JournalTrimBudget, err)
	}
	return out, nil
}

func (l *ModuleLanding) trimJournal(ctx context.Context, keep JournalTrim) (TrimmedJournal, error) {
	head, err := l.scanJournalHead(ctx)
	if err != nil {
		return TrimmedJournal{}, err
	}
	floor, err := l.readFloor(ctx)
	if err != nil {
		return TrimmedJournal{}, err
	}
	out := TrimmedJournal{Head: head, Floor: max(floor, 1)}
	if head <= uint64(keep.KeepEntries)+1 {
		return out, nil
	}
	// Segments wholly below the one holding the newest entry kept by count.
	limitSeg := (head - uint64(keep.KeepEntries)) / JournalSegment
	segs, err := l.v.ReadDir(ctx, journalDir)
	if err != nil {
		return out, volumeErr(ctx, "list the journal", err)
	}
	var old []uint64
	for _, e := range sortedEntries(segs) {
		n, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil || len(e.Name()) != 10 || !e.IsDir() || n >= limitSeg {
			continue
		}
		old = append(old, n)
	}
	now := l.clk.Now()
	var remove []uint64
	for _, seg := range old {
		if len(remove) == keep.MaxSegments {
			out.Leftover = true
			break
		}
		if (seg+1)*JournalSegment > floor {
			// Not below the floor yet: removable only once its newest
			// entry is older than KeepAge. Younger segments follow it.
			newest := path.Join(journalEntryDir((seg+1)*JournalSegment-1), journalEntry)
			info, err := l.v.Stat(ctx, newest)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return out, volumeErr(ctx, "stat "+newest, err)
			}
			if err == nil && now.Sub(info.ModTime()) < keep.KeepAge {
				break
			}
		}
		remove = append(remove, seg)
	}
	if len(remove) == 0 {
		return out, nil
	}
	if next := (remove[len(remove)-1] + 1) * JournalSegment; next > floor {
		// The marker first: from now on a read stopping below it is a gap.
		if err := l.writeFloor(ctx, next); err != nil {
			return out, err
		}
		out.Floor = next
	}
	for _, seg := range remove {
		dir := path.Join(journalDir, fmt.Sprintf("%010d", seg))
		if err := l.v.RemoveAll(ctx, dir); err != nil {
			return out, volumeErr(ctx, "remove "+dir, err)
		}
		out.Removed++
	}
	l.dropLowerFloors(ctx, out.Floor)
	l.log.Info("journal trimmed", "removedSegments", out.Removed, "floor", out.Floor, "head", head, "more", out.Leftover)
	return out, nil
}

// dropLowerFloors removes the markers below floor, once floor's own is
// written: the floor is the highest marker, so they say nothing more, and
// every tail round that reaches the end and most writes list them. A
// marker left behind costs only listing, so a failure is logged, not
// returned: the trim itself succeeded.
func (l *ModuleLanding) dropLowerFloors(ctx context.Context, floor uint64) {
	entries, err := l.v.ReadDir(ctx, journalFloorDir)
	if err != nil {
		l.log.Warn("journal trim: could not list the older floor markers to remove them; they stay (each costs listing)", "err", err)
		return
	}
	for _, e := range entries {
		n, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil || len(e.Name()) != 20 || n >= floor {
			continue
		}
		if err := l.v.RemoveAll(ctx, journalFloorPath(n)); err != nil {
			l.log.Warn("journal trim: could not remove an older floor marker; it stays (it costs listing)", "marker", e.Name(), "err", err)
			return
		}
	}
}

func journalFloorPath(floor uint64) string {
	return path.Join(journalFloorDir, fmt.Sprintf("%020d", floor))
}

// writeFloor adds the floor marker for floor. Its name is its content:
// a marker seen half-written says the same.
func (l *ModuleLanding) writeFloor(ctx context.Context, floor uint64) error {
	p := journalFloorPath(floor)
	if xv, ok := l.v.(ExclusiveVolume); ok {
		if err := xv.CreateExclusive(ctx, p, nil); err != nil && !errors.Is(err, fs.ErrExist) {
			return volumeErr(ctx, "write the journal's floor "+p, err)
		}
		return nil
	}
	if err := l.v.MkdirAll(ctx, journalFloorDir); err != nil {
		return volumeErr(ctx, "create "+journalFloorDir, err)
	}
	if err := l.v.WriteFile(ctx, p, nil); err != nil {
		return volumeErr(ctx, "write the journal's floor "+p, err)
	}
	return nil
}

// readFloor returns the journal's floor: the highest marker (0: never trimmed).
func (l *ModuleLanding) readFloor(ctx context.Context) (uint64, error) {
	entries, err := l.v.ReadDir(ctx, journalFloorDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, volumeErr(ctx, "read the journal's floor", err)
	}
	var floor uint64
	for _, e := range entries {
		if n, err := strconv.ParseUint(e.Name(), 10, 64); err == nil && len(e.Name()) == 20 {
			floor = max(floor, n)
		}
	}
	return floor, nil
}

// JournalFloor returns the first sequence number the journal keeps (1 when
// it was never trimmed): one listing, on the read pool.
func (l *ModuleLanding) JournalFloor(ctx context.Context) (uint64, error) {
	var floor uint64
	err := l.onReadPool(ctx, "journal floor", func() error {
		var err error
		floor, err = l.readFloor(ctx)
		return err
	})
	return max(floor, 1), err
}

// TailJournal is ReadJournal for a reader that keeps its own place (a
// tail): when the read stops at a missing entry it reads the journal's
// floor as well (one listing), and a stop below the floor is a
// *JournalTrimmedError, not the end. Its cost is ReadJournal's and one
// listing when it reaches the end.
func (l *ModuleLanding) TailJournal(ctx context.Context, from uint64, limit int) ([]JournalEntry, uint64, error) {
	return l.readJournalPooled(ctx, from, limit, true)
}
