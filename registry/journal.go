package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/meshrx/meshrx/registry/landing"
)

// The journal's tail: the bound on serving another replica's records. Every
// record write claims an entry on the volume's journal before its commit
// (landing's journal.go); the tailer reads the entries claimed since its
// last tail (one volume operation each, one for the end and one listing of
// the journal's floor: a place a trim removed is a gap, re-derived by a
// full walk, never the end), re-reads each module named
// (ModuleLanding.Latest) and patches the snapshot. The change
// feed makes most writes arrive sooner; the tail makes every one arrive
// within JournalPeriod, announced or not — a failed announcement, a writer
// that died between its commit and its announcement, or one that writes
// the volume without a feed. The same goroutine retries failed
// announcements.

// tailer runs the journal's tail and the announcements' retry every
// maintPeriod until Close. It is the service's goroutine: no request waits
// for it.
func (s *ServedActivation) tailer() {
	defer close(s.tailerDone)
	for {
		// Armed first: rounds start a period apart (back to back when one
		// takes longer).
		t := s.clk.Timer(s.maintPeriod)
		if s.journalPeriod > 0 {
			s.tail()
		}
		s.retryAnnouncements()
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C:
		case <-s.tailKick:
			t.Stop()
		}
	}
}

// stopped returns a context bounded by budget and ended by Close: a child
// of the service's own context, which Close cancels, so that no goroutine
// per call waits for either.
func (s *ServedActivation) stopped(budget time.Duration) (context.Context, context.CancelFunc) {
	return s.clk.WithTimeout(s.stopCtx, budget)
}

// tail reads the journal from where the last tail stopped and absorbs the
// modules its entries name, and those still pending.
func (s *ServedActivation) tail() {
	started := s.clk.Now()
	s.mu.Lock()
	next := s.journalNext
	s.mu.Unlock()
	if next == 0 {
		// No snapshot yet: the tail reads from a little before the head;
		// the first snapshot moves it to its own place (startTail).
		ctx, cancel := s.stopped(s.changeBudget)
		head, err := s.landing.JournalHead(ctx)
		cancel()
		if err != nil {
			s.tailed(started, err)
			return
		}
		next = max(head, journalBacklog+1) - journalBacklog
		s.mu.Lock()
		if s.journalNext != 0 { // a snapshot placed the tail meanwhile
			next = s.journalNext
		}
		s.journalNext = next
		s.mu.Unlock()
	}
	for {
		ctx, cancel := s.stopped(s.changeBudget)
		entries, n, err := s.landing.TailJournal(ctx, next, journalBatch)
		cancel()
		if trimmed, ok := errors.AsType[*landing.JournalTrimmedError](err); ok {
			s.fellBehindTrim(trimmed)
		}
		if err != nil {
			s.tailed(started, err)
			return
		}
		absorbErr := s.absorbJournal(entries)
		s.mu.Lock()
		moved := s.journalNext != next // a snapshot placed the tail meanwhile: it goes on from there next round
		if !moved {
			s.journalNext = n
		}
		s.mu.Unlock()
		next = n
		if absorbErr != nil {
			// The modules not re-read stay pending and are re-read next
			// round; until then the tail does not cover the snapshot.
			s.tailed(started, absorbErr)
			return
		}
		if moved {
			return // the round the snapshot started reports
		}
		if len(entries) < journalBatch {
			break
		}
	}
	s.tailed(started, nil)
}

// fellBehindTrim starts a full derivation for a tail whose place is in a
// trimmed part of the journal: the writes recorded there cannot be read,
// and taking the missing entry for the journal's end would miss every
// write after it until the next reconciliation. The derivation
// (ReconcileChanges from a place below the floor) walks every module and
// places the tail at its own place, past the floor; until it does, the
// tail fails each round and the snapshot is due at Freshness.
func (s *ServedActivation) fellBehindTrim(e *landing.JournalTrimmedError) {
	s.mu.Lock()
	again := s.trimmedPlace == e.From // said once per place, not every round
	s.trimmedPlace = e.From
	s.mu.Unlock()
	if !again {
		s.log.LogAttrs(context.Background(), slog.LevelWarn,
			"registry: the journal's tail is behind a trim of the journal (its place was removed); re-deriving the activation by a full walk",
			slog.Uint64("place", e.From), slog.Uint64("floor", e.Floor))
	}
	s.claimNow()
}

// absorbJournal re-reads the modules entries name, and those whose named
// record was not yet committed at an earlier tail, and patches the
// snapshot with what it finds. A record still not committed stays pending
// for as long as a commit may take (landing.CommitBudget, and a period).
// It fails when a module could not be re-read: that module stays pending,
// re-read by the next tail, however long that takes.
func (s *ServedActivation) absorbJournal(entries []landing.JournalEntry) error {
	now := s.clk.Now()
	want := map[string]string{} // module key -> newest record named
	undecodable := false
	for _, e := range entries {
		if e.Module == "" {
			undecodable = true
			continue
		}
		k := moduleKey(e.Module)
		want[k] = max(want[k], e.Record)
	}
	s.mu.Lock()
	for k, p := range s.pendingJournal {
		want[k] = max(want[k], p.record)
	}
	s.mu.Unlock()
	if undecodable {
		s.log.Warn("registry: a journal entry could not be read; re-deriving the snapshot instead")
		s.claimNow()
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	})
	var failed []string
	for batch := range slices.Chunk(keys, absorbBatch) {
		ps := make([]patch, 0, len(batch))
		for _, key := range batch {
			select {
			case <-s.stop:
				return landing.ErrClosed
			default:
			}
			p, ok := s.absorb(key)
			if !ok {
				// Pending until a re-read succeeds (a full derivation was
				// claimed too): passing over it left its record unserved
				// until the Reconcile cadence, the tail reported healthy.
				s.mu.Lock()
				pe, had := s.pendingJournal[key]
				if !had {
					pe.firstSeen = now
				}
				pe.record = max(pe.record, want[key])
				s.pendingJournal[key] = pe
				s.mu.Unlock()
				failed = append(failed, key)
				continue
			}
			ps = append(ps, p)
			s.mu.Lock()
			switch {
			case p.found && p.rec.ID >= want[key]:
				delete(s.pendingJournal, key)
			default:
				pe, had := s.pendingJournal[key]
				if !had {
					pe.firstSeen = now
				}
				pe.record = max(pe.record, want[key])
				if now.Sub(pe.firstSeen) > landing.CommitBudget+s.journalPeriod {
					delete(s.pendingJournal, key)
					s.log.LogAttrs(context.Background(), slog.LevelInfo, "registry: a journal entry's record never appeared; its write failed before its commit",
						slog.String("module", key), slog.String("record", pe.record))
				} else {
					s.pendingJournal[key] = pe
				}
			}
			overflow := len(s.pendingJournal) > maxPendingJournal
			if overflow {
				clear(s.pendingJournal)
			}
			s.mu.Unlock()
			if overflow {
				s.claimNow()
			}
		}
		s.patchAll(ps)
	}
	if len(failed) > 0 {
		return fmt.Errorf("registry: re-reading %d module(s) named on the journal failed (%s first); the next tail reads them again", len(failed), failed[0])
	}
	return nil
}

// claimNow starts a full derivation for the current write generation.
func (s *ServedActivation) claimNow() {
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	s.claim(gen)
}

// tailed notes how a tail ended, logging the transitions.
func (s *ServedActivation) tailed(started time.Time, err error) {
	s.mu.Lock()
	was := s.tailFailing
	if err == nil {
		s.lastTail = started
		if s.tailBegan.IsZero() {
			s.tailBegan = started
		}
		s.tailFailing, s.tailFailure = false, ""
	} else {
		s.tailFailing, s.tailFailure = true, err.Error()
	}
	s.mu.Unlock()
	switch {
	case err != nil && !was:
		s.log.LogAttrs(context.Background(), slog.LevelWarn,
			"registry: tailing the volume's journal failed; other replicas' records are served by re-derivation within Freshness until it succeeds",
			slog.String("error", err.Error()))
	case err == nil && was:
		s.log.LogAttrs(context.Background(), slog.LevelInfo, "registry: tailing the volume's journal succeeded again")
	}
}

// Unannounced returns how many writes made here wait for their announcement
// on the change feed to be retried.
func (s *ServedActivation) Unannounced() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.unannounced)
}

// AnnounceFailures returns how many announcements on the change feed have
// failed (first attempts and retries).
func (s *ServedActivation) AnnounceFailures() int64 { return s.announceFails.Load() }

// unannouncedModules names, sorted, up to three modules whose writes wait
// for their announcement.
func (s *ServedActivation) unannouncedModules() (names []string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.unannounced {
		names = append(names, r.Module)
	}
	slices.Sort(names)
	n = len(names)
	if len(names) > 3 {
		names = names[:3]
	}
	return names, n
}

// retryAnnouncements announces again every write whose announcement failed.
func (s *ServedActivation) retryAnnouncements() {
	if s.changes == nil {
		return
	}
	s.mu.Lock()
	recs := make([]landing.Record, 0, len(s.unannounced))
	for _, r := range s.unannounced {
		recs = append(recs, r)
	}
	s.mu.Unlock()
	slices.SortFunc(recs, func(a, b landing.Record) int { return strings.Compare(a.ID, b.ID) })
	for _, r := range recs {
		select {
		case <-s.stop:
			return
		default:
		}
		s.announce(r)
	}
}

// tailState says, for the log, how the journal's tail fares.
func (s *ServedActivation) tailState() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.journalPeriod <= 0:
		return "no journal tail"
	case s.tailFailing:
		return "journal tail failing: " + s.tailFailure
	case s.lastTail.IsZero():
		return "journal tail not started"
	}
	return "journal tail last began " + s.clk.Since(s.lastTail).String() + " ago"
}
