package landing

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// Reconciling by the journal. Reconcile lists every module's records: one
// listing per module, 10,000 requests a pass at 10,000 modules on object
// storage, whatever changed. Every record write claims a journal entry
// (journal.go) before its commit, so the writes made since an activation
// was derived are the journal's entries since then: ReconcileChanges reads
// those (one read each), re-reads only the modules they name, and keeps
// every other module as the previous activation holds it. A pass costs
// O(changed), not O(modules).
//
// The full walk (Reconcile) remains where the journal cannot vouch for
// the previous activation: at the first pass (an activation that was not
// derived by ReconcileChanges knows no place on the journal), on a gap (the
// entry to read next is missing while later ones exist: a journal trimmed
// or damaged), on an entry that cannot be decoded (its module is unknown),
// and past maxJournalPass entries. Records written without a journal entry
// (by a build from before the journal) are seen by a full walk only.

// journalMark is where an activation stands on the journal.
type journalMark struct {
	// from is the first entry whose write the activation may not include
	// (0: unknown): the next pass reads the journal from here.
	from uint64
	// since is when the entry at from was first found not yet committed
	// (its record not listed); zero when from is the journal's end.
	since time.Time
	// walked is when the last full walk was made.
	walked time.Time
}

// fullWalkEvery bounds how long a record written without a journal entry
// (by an older build, or by hand) can go unseen while passes read the
// journal: past it, a pass walks every module.
const fullWalkEvery = time.Hour

// JournalFrom is the first journal sequence number whose write a may not
// include: a tail of the journal that reads from here on misses nothing a
// missed (0 when a was not derived by ReconcileChanges).
func (a Activation) JournalFrom() uint64 { return a.journal.from }

// walkBacklog is how many entries before the journal's head a full walk
// leaves for the next pass to read: a write whose entry was claimed before
// the head was read may commit after the walk listed its module. One write
// is in flight per replica (the landing lane), so this covers 64 replicas.
const walkBacklog = 64

// maxJournalPass bounds the journal entries one ReconcileChanges reads;
// past it, a full walk.
const maxJournalPass = 4096

// ReconcileChanges derives the activation list as Reconcile does, from the
// journal's entries since prev was derived: it reads the journal from
// prev.JournalFrom() (one volume operation per entry, one for the end, and
// the journal's head: two listings), re-reads the modules those entries
// name (Reconcile's cost for each) and keeps every other module's record as
// prev holds it. prev is an earlier result of ReconcileChanges, patched or
// not; any other (the zero Activation, a result of Activation or
// Reconcile) is a full walk, as is a journal with a gap (see above). An
// entry whose record is not listed yet (its commit may be running) is read
// again by the next pass, for up to twice CommitBudget after it was first
// found so; then its write is taken to have failed.
func (l *ModuleLanding) ReconcileChanges(ctx context.Context, prev Activation) (Activation, error) {
	// The head is read first: every entry below it existed then, and
	// entries are never removed one by one, so a read that stops below it
	// met a gap, not the journal's end.
	head, err := l.JournalHead(ctx)
	if err != nil {
		return Activation{}, err
	}
	from := prev.journal.from
	if from == 0 {
		return l.walk(ctx, prev, head)
	}
	if from > head || l.clk.Now().Sub(prev.journal.walked) > fullWalkEvery {
		// A mark past the head: the journal was re-made under us.
		return l.walk(ctx, prev, head)
	}
	entries, next, err := l.ReadJournal(ctx, from, maxJournalPass)
	if err != nil {
		return Activation{}, err
	}
	if next < head || slices.ContainsFunc(entries, func(e JournalEntry) bool { return e.Module == "" }) {
		l.log.Info("reconciling by a full walk: the journal has a gap, an unreadable entry or more entries than a pass reads",
			"from", from, "stopped", next, "head", head, "entries", len(entries))
		return l.walk(ctx, prev, head)
	}

	var keys []string
	for _, e := range entries {
		keys = append(keys, moduleKey(e.Module))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	results, err := l.readModules(ctx, keys, prev)
	if err != nil {
		return Activation{}, err
	}
	reread := make(map[string]moduleRead, len(keys))
	for i, k := range keys {
		reread[k] = results[i]
	}

	act := Activation{journal: l.markAfter(prev.journal, entries, next, reread)}
	kept := func(r Record) bool { _, ok := reread[moduleKey(r.Module)]; return !ok }
	act.Modules = keepRecords(prev.Modules, kept, len(keys))
	act.Ended = keepRecords(prev.Ended, kept, len(keys))
	for _, e := range prev.Unreadable {
		if _, ok := reread[recordPathKey(e.Path)]; !ok {
			act.Unreadable = append(act.Unreadable, e)
		}
	}
	var bad []RecordError
	for _, k := range keys {
		f := reread[k]
		bad = append(bad, f.bad...)
		switch {
		case f.ok && f.rec.State.Served():
			act.Modules = append(act.Modules, f.rec)
		case f.ok:
			act.Ended = append(act.Ended, f.rec)
		}
	}
	byName := func(a, b Record) int { return CompareNames(a.Module, b.Module) }
	slices.SortFunc(act.Modules, byName)
	slices.SortFunc(act.Ended, byName)
	act.Unreadable = append(act.Unreadable, bad...)
	slices.SortStableFunc(act.Unreadable, func(a, b RecordError) int {
		return cmp.Compare(recordPathKey(a.Path), recordPathKey(b.Path))
	})
	l.reportUnreadable(bad)
	return act, nil
}

// walk is the full walk (Reconcile) of a ReconcileChanges pass, marked to
// read the journal from a little before head on.
func (l *ModuleLanding) walk(ctx context.Context, prev Activation, head uint64) (Activation, error) {
	act, err := l.Reconcile(ctx, prev)
	if err != nil {
		return Activation{}, err
	}
	act.journal = journalMark{from: max(head, walkBacklog+1) - walkBacklog, walked: l.clk.Now()}
	return act, nil
}

// markAfter is where a pass that read entries (up to next) leaves the next
// one: at the first entry whose record its module's listing did not show
// (the commit may still be running), else at next. An entry found so for
// longer than twice CommitBudget is passed over: its write failed before
// its commit.
func (l *ModuleLanding) markAfter(prev journalMark, entries []JournalEntry, next uint64, reread map[string]moduleRead) journalMark {
	now := l.clk.Now()
	for _, e := range entries {
		if e.Record <= reread[moduleKey(e.Module)].last {
			continue // committed (or a newer record of its module is)
		}
		since := now
		if e.Seq == prev.from && !prev.since.IsZero() {
			since = prev.since
		}
		if now.Sub(since) > 2*CommitBudget {
			l.log.Info("a journal entry's record never appeared; its write failed before its commit",
				"module", e.Module, "record", e.Record, "seq", e.Seq)
			continue
		}
		return journalMark{from: e.Seq, since: since, walked: prev.walked}
	}
	return journalMark{from: next, walked: prev.walked}
}

// keepRecords returns the records of recs that keep holds, with room for extra more.
func keepRecords(recs []Record, keep func(Record) bool, extra int) []Record {
	var out []Record // nil when empty, as Reconcile leaves it
	for _, r := range recs {
		if keep(r) {
			if out == nil {
				out = make([]Record, 0, len(recs)+extra)
			}
			out = append(out, r)
		}
	}
	return out
}

// recordPathKey is the module key of a record's path (modules/<key>/records/…).
func recordPathKey(p string) string {
	rest, ok := strings.CutPrefix(p, modulesDir+"/")
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(rest, "/")
	return key
}
