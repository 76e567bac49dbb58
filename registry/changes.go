package registry

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// The change feed: how a replica absorbs another replica's write by reading
// only the module written. Every write made through a ServedActivation puts
// that module's change node; every ServedActivation keeps one live query
// over the change nodes, and for each one another replica updated it
// re-reads that module's latest record (ModuleLanding.Latest) and patches
// its snapshot. The full derivation becomes the reconciliation behind it:
// on the Reconcile cadence while the feed is live, on the Freshness cadence
// while it is not, and at once after a Reset (the feed had a gap).

// announce puts the change node of the module rec was written to. The write
// has happened: a failure here is not returned. It is counted
// (AnnounceFailures), the write is kept until an announcement of it (or of
// a newer write to its module) succeeds — retried every JournalPeriod,
// shown by /readyz meanwhile — and other replicas read it from the
// volume's journal within Freshness regardless.
func (s *ServedActivation) announce(rec landing.Record) {
	if s.changes == nil {
		return
	}
	key := moduleKey(rec.Module)
	content, _ := json.Marshal(ModuleChange{Module: rec.Module, Record: rec.ID, State: string(rec.State), Replica: rec.Replica})
	n := mesh.Node{Path: mesh.JoinPath(s.changesNS, mesh.FoldName(rec.Module)), NodeType: ChangeNodeType, Name: rec.Module, Content: content}
	ctx, cancel := s.stopped(s.changeBudget)
	defer cancel()
	_, err := s.changes.Put(ctx, n)
	s.mu.Lock()
	held, retrying := s.unannounced[key]
	switch {
	case err == nil:
		if retrying && held.ID <= rec.ID {
			delete(s.unannounced, key)
		}
	case !retrying || held.ID < rec.ID:
		s.unannounced[key] = rec
	}
	s.mu.Unlock()
	if err != nil {
		s.announceFails.Add(1)
		if !retrying {
			s.log.LogAttrs(ctx, slog.LevelWarn, "registry: announcing a write on the change feed failed; it is retried, and other replicas read it from the volume's journal meanwhile",
				slog.String("module", rec.Module), slog.String("record", rec.ID), slog.String("error", err.Error()))
		}
	}
}

// startFeed subscribes the change feed's live query. It is called by
// NewServedActivation and, after a failure, by the retry timer.
func (s *ServedActivation) startFeed() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.feedAttempt++
	attempt := s.feedAttempt
	s.feedTimer = nil
	s.mu.Unlock()
	sub := s.changes.Query(s.changesQuery).Subscribe(rx.NewObserver(
		func(ch mesh.Change) { s.onChange(attempt, ch) },
		func(err error) { s.feedFailed(attempt, err) },
		func() { s.feedFailed(attempt, errors.New("the live query ended")) },
	))
	s.mu.Lock()
	if s.closed || s.feedAttempt != attempt {
		s.mu.Unlock()
		sub.Unsubscribe()
		return
	}
	s.feedSub = sub
	s.mu.Unlock()
}

// onChange handles one frame of the change feed.
func (s *ServedActivation) onChange(attempt uint64, ch mesh.Change) {
	s.mu.Lock()
	if s.closed || attempt != s.feedAttempt {
		s.mu.Unlock()
		return
	}
	switch ch.Kind {
	case mesh.Initial, mesh.Reset:
		// A full answer: the feed is live from now. Changes made before it
		// (a Reset: during the gap) are not in the frames: a snapshot
		// derived earlier is due at Freshness (dueAfter), and after a gap
		// it is re-derived at once.
		regap := ch.Kind == mesh.Reset || s.feedSince != (time.Time{})
		s.feedLive, s.feedSince = true, s.clk.Now()
		has, gen := s.has, s.gen
		s.mu.Unlock()
		if regap && has {
			if _, started := s.claimFor(gen, false); started {
				s.log.Warn("registry: the change feed answered anew (after a gap or a restart of its query); re-deriving the activation for what it may have missed",
					slog.String("kind", ch.Kind.String()))
			}
		}
		return
	case mesh.Removed:
		s.mu.Unlock()
		return
	}
	own := s.landing.Replica()
	added := false
	for _, n := range ch.Items {
		var c ModuleChange
		if err := json.Unmarshal(n.Content, &c); err != nil || landing.ValidateModuleName(c.Module) != nil {
			continue // not a change node this package wrote: reconciliation covers whatever it stood for
		}
		if c.Replica == own {
			continue // our own writes invalidated the snapshot as they returned
		}
		s.pending[mesh.FoldName(c.Module)] = struct{}{}
		added = true
	}
	s.mu.Unlock()
	if added {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// feedFailed notes that the feed's query ended and arms its retry; until
// it answers again snapshots are due at Freshness.
func (s *ServedActivation) feedFailed(attempt uint64, err error) {
	s.mu.Lock()
	if s.closed || attempt != s.feedAttempt {
		s.mu.Unlock()
		return
	}
	wasLive := s.feedLive
	s.feedLive = false
	s.feedAttempt++
	s.feedSub = nil
	s.mu.Unlock()
	if wasLive {
		s.log.Warn("registry: the change feed is down; other replicas' writes are absorbed by re-derivation within Freshness until it is back",
			slog.String("query", s.changesQuery), slog.Duration("retry", s.changesRetry), slog.String("error", err.Error()))
	}
	timer := rx.Timer(s.changesRetry, s.clk).Subscribe(rx.NewObserver(func(time.Time) { s.startFeed() }, nil, nil))
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		timer.Unsubscribe()
		return
	}
	s.feedTimer = timer
	s.mu.Unlock()
}

// absorber re-reads the modules the feed named, one at a time, until Close.
// It is the service's goroutine: no request waits for it.
func (s *ServedActivation) absorber() {
	defer close(s.absorberDone)
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		keys := make([]string, 0, len(s.pending))
		for k := range s.pending {
			keys = append(keys, k)
		}
		clear(s.pending)
		s.mu.Unlock()
		slices.Sort(keys)
		// Patched in batches: one copy of the snapshot per batch, not per
		// module, however many the feed named at once.
		for batch := range slices.Chunk(keys, absorbBatch) {
			ps := make([]patch, 0, len(batch))
			for _, key := range batch {
				select {
				case <-s.stop:
					return
				default:
				}
				if p, ok := s.absorb(key); ok {
					ps = append(ps, p)
				}
			}
			s.patchAll(ps)
		}
	}
}

// absorbBatch bounds how many re-read modules wait to be patched together.
const absorbBatch = 256

// absorb re-reads one module and returns the patch for what it found. A
// module that cannot be read is left to the next reconciliation, which it
// makes due at once.
func (s *ServedActivation) absorb(key string) (patch, bool) {
	ctx, cancel := s.clk.WithTimeout(context.Background(), s.changeBudget)
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	rec, found, err := s.landing.Latest(ctx, key)
	cancel()
	if err != nil {
		if errors.Is(err, landing.ErrClosed) {
			return patch{}, false
		}
		s.log.Warn("registry: re-reading a module another replica wrote failed; re-deriving the snapshot instead",
			slog.String("module", key), slog.String("error", err.Error()))
		s.mu.Lock()
		gen := s.gen
		s.mu.Unlock()
		s.claim(gen)
		return patch{}, false
	}
	return patch{key: key, rec: rec, found: found}, true
}

// patch applies p to the snapshot, and keeps it for the derivation in
// flight, whose listing may predate it.
func (s *ServedActivation) patch(p patch) { s.patchAll([]patch{p}) }

// patchAll applies ps (one per module, in module-key order) to the
// snapshot as one new snapshot, and keeps them for the derivation in
// flight, whose listing may predate them. The new module list is built
// outside the service's lock (it copies the chunks the patches fall in, see
// moduleList): readers are not held up by it; if the snapshot moved
// meanwhile, it is built again on the new one.
func (s *ServedActivation) patchAll(ps []patch) {
	if len(ps) == 0 {
		return
	}
	s.mu.Lock()
	inflight := s.inflight.Current() != nil
	for i := range ps {
		s.patchSeq++
		ps[i].seq = s.patchSeq
		if inflight {
			// Bounded by the modules written during one derivation, which
			// its budget bounds.
			s.patches = append(s.patches, ps[i])
		}
	}
	for {
		if !s.has {
			s.mu.Unlock()
			return // the next derivation reads them
		}
		base := s.snap
		s.mu.Unlock()
		next, changed := patchedSnap(base, ps)
		if changed == 0 {
			return
		}
		s.mu.Lock()
		if s.has && s.snap.Seq == base.Seq {
			s.seq++
			next.Seq = s.seq
			s.snap = next
			s.mu.Unlock()
			break
		}
		// Published or patched meanwhile: apply ps to what is served now.
	}
	for _, p := range ps {
		if !p.local {
			s.absorbed.Add(1)
		}
	}
}

// patchedSnap applies ps (one per module, in module-key order) to a
// snapshot: its served modules (moduleList.patched) and its ended
// markers. A patch whose record is not newer than the one held for its
// module, served or ended, changes nothing (nor does one that found no
// record): so a re-read that started before an uninstall or removal, or
// before a first commit, and ends after it cannot undo it. The snapshot returned keeps sn's Seq and DerivedAt.
func patchedSnap(sn Snapshot, ps []patch) (Snapshot, int) {
	eff := ps[:0:0]
	for _, p := range ps {
		held, ok := sn.Lookup(p.key)
		if !ok {
			if i, found := slices.BinarySearchFunc(sn.rest.Ended, p.key, func(r landing.Record, k string) int {
				return landing.CompareNames(r.Module, k)
			}); found {
				held, ok = sn.rest.Ended[i], true
			}
		}
		switch {
		case p.found && ok && p.rec.ID <= held.ID:
			continue // what we hold is as new
		case !p.found:
			// Nothing held, nothing to remove; and a held record is never
			// removed by a re-read that found none: records are never
			// deleted, so that re-read listed the module before the
			// record's commit (a tail reads the journal entry written
			// first). A derivation replaces the snapshot whole.
			continue
		}
		eff = append(eff, p)
	}
	if len(eff) == 0 {
		return sn, 0
	}
	mods, content, changed := sn.mods.patched(sn.content, eff)
	ended := slices.Clone(sn.rest.Ended)
	for _, p := range eff {
		i, found := slices.BinarySearchFunc(ended, p.key, func(r landing.Record, k string) int {
			return landing.CompareNames(r.Module, k)
		})
		ends := p.found && !p.rec.State.Served()
		switch {
		case found && ends:
			ended[i] = p.rec
		case found:
			ended = slices.Delete(ended, i, i+1)
		case ends:
			ended = slices.Insert(ended, i, p.rec)
		default:
			continue
		}
		changed++
	}
	sn.mods, sn.content, sn.rest.Ended = mods, content, ended // sn keeps its place on the journal
	return sn, changed
}
