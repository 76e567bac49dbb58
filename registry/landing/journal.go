package landing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
)

// The journal is the volume's own list of writes, in one order every
// replica reads the same way: before a record is renamed into place (its
// commit), its writer claims the next journal sequence number with an entry
// naming the module and the record. A replica that tails the journal reads
// one entry per write made since its last tail (and one failed read when
// there is none): O(changes), never O(modules), and independent of any
// announcement a writer makes elsewhere, which a crash right after the
// commit can lose.
//
// Layout: journal/<segment>/<seq>/entry.json, where seq is the entry's
// sequence number (20 digits) and segment is seq / JournalSegment (10
// digits), so that no directory holds more than JournalSegment entries. An
// entry is staged whole and its directory renamed into place, which fails
// when the sequence number is taken (a rename onto an existing, non-empty
// directory: the claim the version claims rely on too; on an
// ExclusiveVolume the entry's file is created with CreateExclusive, which
// fails the same way); the writer then tries the next. Sequence numbers start at 1 and have no holes: a writer
// moves past a number only once it exists.
//
// An entry names a record that may not be in place yet (its commit follows
// the entry) or ever (a write that failed after its entry): a reader keeps
// looking for it for as long as a commit may take (CommitBudget) and then
// forgets it.
const (
	journalDir     = "journal"
	journalEntry   = "entry.json"
	JournalSegment = 4096
)

// journalProbes bounds how many taken sequence numbers a writer steps over
// before it lists the journal to find its end.
const journalProbes = 64

// JournalEntry is one write on the journal.
type JournalEntry struct {
	Seq     uint64 `json:"-"`       // its place in the journal, from 1
	Module  string `json:"module"`  // the module written
	Record  string `json:"record"`  // the ID of the record the write commits
	Replica string `json:"replica"` // the ModuleLanding that wrote it
}

type journalFormat struct {
	Format int `json:"format"`
	JournalEntry
}

func journalSegmentDir(seq uint64) string {
	return path.Join(journalDir, fmt.Sprintf("%010d", seq/JournalSegment))
}

func journalEntryDir(seq uint64) string {
	return path.Join(journalSegmentDir(seq), fmt.Sprintf("%020d", seq))
}

// journal claims the next journal sequence number for e and returns it. It
// runs on the landing lane, before the record's commit.
func (l *ModuleLanding) journal(ctx context.Context, e JournalEntry) (uint64, error) {
	data, err := json.Marshal(journalFormat{Format: 1, JournalEntry: e})
	if err != nil {
		return 0, fmt.Errorf("registry: encode journal entry: %w", err)
	}
	xv, exclusive := l.v.(ExclusiveVolume)
	stage := path.Join(stagingDir, e.Record+"-journal")
	if !exclusive {
		if err := l.v.MkdirAll(ctx, stage); err != nil {
			return 0, l.abandon(ctx, stage, volumeErr(ctx, "create staging directory "+stage, err))
		}
		if err := l.v.WriteFile(ctx, path.Join(stage, journalEntry), data); err != nil {
			return 0, l.abandon(ctx, stage, volumeErr(ctx, "write journal entry", err))
		}
	}
	l.mu.Lock()
	next := l.journalNext
	l.mu.Unlock()
	probes := 0
	scanned := false // next came from a listing of the head in this call
	for {
		if next == 0 || probes == journalProbes {
			head, err := l.scanJournalHead(ctx)
			if err != nil {
				return 0, l.abandon(ctx, stage, err)
			}
			next, probes, scanned = max(next, head), 0, true
		}
		if exclusive {
			// Object storage: the entry's file is created if and only if
			// the sequence number is free.
			err := xv.CreateExclusive(ctx, path.Join(journalEntryDir(next), journalEntry), data)
			switch {
			case err == nil:
				if retake, err := l.belowFloor(ctx, next, scanned, stage); retake || err != nil {
					if err != nil {
						return 0, err
					}
					next = 0
					continue
				}
				l.advanceJournal(next + 1)
				return next, nil
			case !errors.Is(err, fs.ErrExist):
				return 0, volumeErr(ctx, "claim journal entry "+journalEntryDir(next), err)
			}
			next++ // taken by another write
			probes++
			continue
		}
		if err := l.v.MkdirAll(ctx, journalSegmentDir(next)); err != nil {
			return 0, l.abandon(ctx, stage, volumeErr(ctx, "create "+journalSegmentDir(next), err))
		}
		renameErr := l.v.Rename(ctx, stage, journalEntryDir(next))
		if renameErr == nil {
			if retake, err := l.belowFloor(ctx, next, scanned, stage); retake || err != nil {
				if err != nil {
					return 0, err
				}
				next = 0
				continue
			}
			l.advanceJournal(next + 1)
			return next, nil
		}
		if _, err := l.v.Stat(ctx, journalEntryDir(next)); err != nil {
			return 0, l.abandon(ctx, stage, volumeErr(ctx, "claim journal entry "+journalEntryDir(next), renameErr))
		}
		next++ // taken by another write
		probes++
	}
}

// belowFloor checks a claim just made at seq from this replica's own
// knowledge of the journal (not scanned from a listing of its head in the
// same call): a number below the journal's floor is free again because a
// trim removed its segment, and an entry there would never be tailed. Such
// a claim is taken back (its entry moved back to stage, or deleted on an
// ExclusiveVolume) and retake is true: the caller claims again at the head.
func (l *ModuleLanding) belowFloor(ctx context.Context, seq uint64, scanned bool, stage string) (retake bool, err error) {
	if scanned {
		return false, nil // at the head, which a trim keeps
	}
	floor, err := l.readFloor(ctx)
	if err != nil || seq >= floor {
		// Unknown floor: the entry stays where it is claimed, and the
		// write fails as a claim that could not be checked.
		if err != nil {
			return false, volumeErr(ctx, "check journal entry "+journalEntryDir(seq)+" against the journal's floor", err)
		}
		return false, nil
	}
	l.log.Warn("a journal claim fell below the journal's floor (a trim removed its segment); claiming again at the head",
		"seq", seq, "floor", floor)
	if _, ok := l.v.(ExclusiveVolume); ok {
		err = l.v.RemoveAll(ctx, journalEntryDir(seq))
	} else {
		err = l.v.Rename(ctx, journalEntryDir(seq), stage)
	}
	if err != nil {
		return false, volumeErr(ctx, "take back journal entry "+journalEntryDir(seq)+" below the journal's floor", err)
	}
	return true, nil
}

// advanceJournal notes that the journal holds entries below next.
func (l *ModuleLanding) advanceJournal(next uint64) {
	l.mu.Lock()
	l.journalNext = max(l.journalNext, next)
	l.mu.Unlock()
}

// scanJournalHead lists the journal for the first free sequence number:
// two listings, the segments and the last non-empty one.
func (l *ModuleLanding) scanJournalHead(ctx context.Context) (uint64, error) {
	segs, err := l.v.ReadDir(ctx, journalDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 1, nil
	}
	if err != nil {
		return 0, volumeErr(ctx, "list the journal", err)
	}
	segs = sortedEntries(segs)
	for i := len(segs) - 1; i >= 0; i-- {
		if _, err := strconv.ParseUint(segs[i].Name(), 10, 64); err != nil || len(segs[i].Name()) != 10 || !segs[i].IsDir() {
			continue
		}
		dir := path.Join(journalDir, segs[i].Name())
		entries, err := l.v.ReadDir(ctx, dir)
		if err != nil {
			return 0, volumeErr(ctx, "list "+dir, err)
		}
		entries = sortedEntries(entries)
		for j := len(entries) - 1; j >= 0; j-- {
			seq, err := strconv.ParseUint(entries[j].Name(), 10, 64)
			if err != nil || len(entries[j].Name()) != 20 || !entries[j].IsDir() {
				continue
			}
			return seq + 1, nil
		}
	}
	// No entry: a journal trimmed to nothing (a trim keeps the head's
	// segment, so only by hand) starts again at its floor.
	floor, err := l.readFloor(ctx)
	return max(floor, 1), err
}

// JournalHead returns the sequence number the next journal entry will get:
// a tail that starts there reads every write whose entry is claimed after
// this call. It lists the journal (two volume operations), on the read pool.
func (l *ModuleLanding) JournalHead(ctx context.Context) (uint64, error) {
	var head uint64
	err := l.onReadPool(ctx, "journal head", func() error {
		var err error
		head, err = l.scanJournalHead(ctx)
		return err
	})
	if err == nil {
		l.advanceJournal(head)
	}
	return head, err
}

// ReadJournal returns the journal's entries from sequence number from on,
// at most limit of them, and the sequence number to read from next: one
// volume operation per entry, and one for the first that does not exist
// yet. An entry that cannot be decoded is returned with its Module empty:
// the reader cannot tell what it stood for (a full reconciliation can).
// It runs on the read pool. A stop at a missing entry may be the end or a
// place a trim removed: a reader that keeps its own place uses
// TailJournal, which tells them apart; ReconcileChanges reads the head
// first instead.
func (l *ModuleLanding) ReadJournal(ctx context.Context, from uint64, limit int) ([]JournalEntry, uint64, error) {
	return l.readJournalPooled(ctx, from, limit, false)
}

// readJournalPooled is ReadJournal, and TailJournal with checkFloor: a
// stop at a missing entry then reads the floor after the read (a trim
// writes it before it removes), and a stop below it is a
// *JournalTrimmedError.
func (l *ModuleLanding) readJournalPooled(ctx context.Context, from uint64, limit int, checkFloor bool) ([]JournalEntry, uint64, error) {
	if from == 0 {
		from = 1
	}
	var (
		out  []JournalEntry
		next uint64
	)
	err := l.onReadPool(ctx, "journal tail", func() error {
		var err error
		out, next, err = l.readJournal(ctx, from, limit)
		if err != nil || !checkFloor || len(out) == limit {
			return err
		}
		floor, err := l.readFloor(ctx)
		if err != nil {
			return err
		}
		if next < floor {
			return &JournalTrimmedError{From: next, Floor: floor}
		}
		return nil
	})
	if err != nil {
		return nil, from, err
	}
	l.advanceJournal(next)
	return out, next, nil
}

// readJournal reads entries from from on, at most limit, until the first
// missing one (see ReadJournal).
func (l *ModuleLanding) readJournal(ctx context.Context, from uint64, limit int) ([]JournalEntry, uint64, error) {
	var out []JournalEntry
	next := from
	for len(out) < limit {
		p := path.Join(journalEntryDir(next), journalEntry)
		data, err := l.v.ReadFile(ctx, p, maxEntryBytes)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		// An entry that is there but is no entry of this build (too large,
		// not a file) is unreadable, or no tail would ever get past it;
		// any other failure fails the read, and the next tail reads the
		// entry again.
		if err != nil && !IsTooLarge(err) && !errors.Is(err, errNotRegular) {
			return nil, from, volumeErr(ctx, "read journal entry "+p, err)
		}
		var f journalFormat
		if err == nil {
			err = json.Unmarshal(data, &f)
		}
		if err != nil || f.Format != 1 || ValidateModuleName(f.Module) != nil {
			l.log.Warn("unreadable journal entry", "entry", p, "err", err)
			f = journalFormat{}
		}
		f.Seq = next
		out = append(out, f.JournalEntry)
		next++
	}
	return out, next, nil
}
