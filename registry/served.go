package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/internal/flight"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// journalBacklog is how many entries before the journal's head a tail
// started before any snapshot reads: writes whose entry was claimed just
// before the head was read may commit after they were looked for.
const journalBacklog = 64

// Defaults for ServedOptions fields left zero.
const (
	DefaultFreshness        = 30 * time.Second
	DefaultDerivationBudget = 60 * time.Second
	DefaultReconcile        = 5 * time.Minute
	DefaultChangeBudget     = 10 * time.Second
	DefaultChangesRetry     = 5 * time.Second
	DefaultChangesNamespace = "RegistryChanges"
)

// ServedOptions configures a ServedActivation.
type ServedOptions struct {
	// Clock measures freshness and bounds derivations; nil is the real clock.
	Clock clock.Clock
	// Freshness is the bound within which a record another replica
	// commits is served here, however its announcement fared: the journal
	// tail (JournalPeriod) keeps it; without a tail, a snapshot is
	// re-derived once it is this old. Readiness fails while this replica
	// may be missing records committed longer ago than this. Default 30s.
	Freshness time.Duration
	// DerivationBudget bounds one derivation (a scan of the records).
	// Default 60s.
	DerivationBudget time.Duration
	// Logger receives one warning when derivations start failing (the
	// snapshot served from then on grows stale) and one line when one
	// succeeds again; nil is slog.Default().
	Logger *slog.Logger

	// Changes is the mesh the replicas announce their writes on: every
	// write made through this service puts the module's change node
	// (ChangesNamespace/{module}, node type ChangeNodeType), and a live
	// query over those nodes tells this replica which module another
	// replica wrote, so that it re-reads that module's records alone and
	// patches its snapshot: O(changes), not O(modules). Nil: no feed, and
	// other replicas' writes are absorbed by re-derivation within Freshness.
	Changes mesh.Store
	// ChangesNamespace holds the change nodes. Default DefaultChangesNamespace.
	ChangesNamespace string
	// Reconcile is how often the snapshot is re-derived while the
	// journal's tail covers it. With the tail, a re-derivation reads the
	// journal's entries since the snapshot's own place on it and re-reads
	// only the modules they name (landing.ModuleLanding.ReconcileChanges:
	// O(changed)); the first derivation, and one that meets a gap in the
	// journal, walk every module. Without the tail (NoJournal) every
	// derivation walks every module (ModuleLanding.Reconcile), which also
	// sees records written by code that keeps no journal. While the tail
	// fails, or without one, Freshness applies; a feed Reset re-derives at
	// once. Default DefaultReconcile (5m).
	Reconcile time.Duration
	// ChangeBudget bounds writing a change node and re-reading one changed
	// module. Default DefaultChangeBudget (10s).
	ChangeBudget time.Duration
	// ChangesRetry is the wait before the change feed's query is started
	// again after it failed. Default DefaultChangesRetry (5s).
	ChangesRetry time.Duration
	// JournalPeriod is how often the volume's journal is tailed (see
	// landing.ModuleLanding.TailJournal): every record another replica
	// commits is re-read and patched in within about this long, whatever
	// became of its announcement on the change feed — the bound Freshness
	// rests on. It is also how often failed announcements are retried.
	// Default Freshness/6 (5s). Negative (NoJournal): no tail, and
	// the snapshot is re-derived in full every Freshness instead.
	JournalPeriod time.Duration
}

// NoJournal, as ServedOptions.JournalPeriod, turns the journal's tail off:
// other replicas' records are then served within Freshness by re-deriving
// the whole activation (O(modules)) on that cadence, feed or no feed.
const NoJournal time.Duration = -1

// journalBatch bounds the entries one tail reads at once.
const journalBatch = 1024

// maxPendingJournal bounds the journal entries whose record a replica is
// still waiting to see committed; beyond it, a full derivation instead.
const maxPendingJournal = 10_000

// ChangeNodeType is the node type of a module's change node, whose content
// is a ModuleChange.
const ChangeNodeType = "ModuleChange"

// ModuleChange is the content of a change node: the latest write made to a
// module, by which replica.
type ModuleChange struct {
	Module  string `json:"module"`
	Record  string `json:"record"`
	State   string `json:"state"`
	Replica string `json:"replica"`
}

// Snapshot is one derived activation list, numbered so that consumers (the
// index) can tell a new derivation from the one they already built on. Its
// served modules are kept as a persistent list whose unchanged chunks the
// snapshots share (see moduleList): a publication patches a snapshot in
// O(changes), not O(modules).
type Snapshot struct {
	Seq       uint64    // increases with every published derivation
	DerivedAt time.Time // when the derivation that produced it started

	mods moduleList
	// rest is the activation but for its Modules (nil): Ended, Unreadable
	// and its place on the journal.
	rest landing.Activation
	// content digests what an index is assembled from (see contentDigest):
	// computed off the request path when a derivation publishes, and kept
	// by every patch in O(1).
	content [32]byte
}

// newSnapshot keeps a's modules as a moduleList (which keeps a.Modules:
// they must not be modified after).
func newSnapshot(a landing.Activation, seq uint64, derivedAt time.Time, content [32]byte) Snapshot {
	mods := newModuleList(a.Modules)
	a.Modules = nil
	return Snapshot{Seq: seq, DerivedAt: derivedAt, mods: mods, rest: a, content: content}
}

// Activation returns the snapshot as a landing.Activation: its Modules are
// a copy, O(modules).
func (s Snapshot) Activation() landing.Activation {
	a := s.rest
	a.Modules = s.mods.flat()
	return a
}

// Lookup returns the served record of module, compared without case.
func (s Snapshot) Lookup(module string) (landing.Record, bool) {
	return s.mods.lookup(module)
}

// JournalFrom is the first journal sequence number whose write the
// snapshot may not include (see landing.Activation.JournalFrom).
func (s Snapshot) JournalFrom() uint64 { return s.rest.JournalFrom() }

// ServedActivation is the activation list the index serves: a maintained
// snapshot, never a scan per request.
//
//   - A landing, shelving, uninstall or removal made through it is served on
//     this replica's very next read: with the change feed (ServedOptions.
//     Changes) it is patched into the snapshot before it returns; without,
//     the snapshot is dropped and the next read derives anew. A re-publish
//     answered "already published" is patched in and announced as well.
//   - Every record another replica commits is served within Freshness: the
//     journal's tail (ServedOptions.JournalPeriod, see journal.go) re-reads
//     the modules written since the last tail, whatever became of their
//     announcement. With the change feed, a write another replica announced
//     is absorbed sooner, by re-reading that module alone (see changes.go).
//     The derivation is the reconciliation behind both, on the Reconcile
//     cadence while the tail covers the snapshot, and at once after a feed
//     Reset; with the tail it reads the journal since the snapshot's place
//     on it and the modules written since (ModuleLanding.ReconcileChanges),
//     walking every module only at the first derivation or on a gap.
//   - Without a tail (or while it fails), records another replica wrote are
//     absorbed within Freshness by re-derivation: the first read once the
//     snapshot is within its last derivation's duration (and a quarter) of
//     Freshness still answers at once from the snapshot and starts one
//     re-derivation, which every concurrent reader shares, so that it is
//     published before the snapshot is due (while a derivation takes under
//     half of Freshness). A derivation is a reconciliation
//     (ModuleLanding.Reconcile): it reads the modules in parallel on the
//     landing's read pool and re-reads only the records that changed since
//     the snapshot.
//   - The snapshot keeps the latest record of every module that is no longer
//     served (Activation.Ended): a re-read that started before an uninstall
//     or removal and ends after it is older than that record and changes
//     nothing, so nothing ended is served again by a stale read. Which of a
//     module's records is newest is decided by its sequence number on the
//     volume, not by any replica's clock (landing.Record.ID).
//   - A derivation that started before a local write is never published over
//     it (a write generation guards the snapshot).
//   - The derivation in flight belongs to the service, not to the request
//     that started it: its slot is claimed by compare-and-swap, its result is
//     an rx.AsyncSubject fed by the service's own subscription, and the slot
//     is released only if it still holds this derivation. A request that
//     gives up leaves the derivation running for the next reader, a fault is
//     never cached as the answer, and a derivation that finishes late never
//     evicts its successor.
//
// The bundle download keeps the authoritative ModuleLanding.Activation: it
// decides which bytes a consumer receives.
type ServedActivation struct {
	landing   *landing.ModuleLanding
	clk       clock.Clock
	freshness time.Duration
	budget    time.Duration
	log       *slog.Logger

	mu      sync.Mutex
	snap    Snapshot
	has     bool
	gen     uint64 // bumped by every local write
	seq     uint64
	closed  bool
	running sync.WaitGroup
	last    *derivation // the derivation started last: the next one scans once its scan has returned

	lastTook    time.Duration // how long the last published derivation took
	failing     bool          // the last derivation failed
	failedSince time.Time     // when derivations started failing
	failure     string        // the last derivation's error

	inflight    flight.Slot[Snapshot, *derivation] // Meta: the derivation's generation and scan
	derivations atomic.Int64
	absorbed    atomic.Int64 // modules patched into the snapshot from the change feed

	// The change feed (nil changes: none).
	changes      mesh.Store
	changesQuery string
	changesNS    string
	reconcile    time.Duration
	changeBudget time.Duration
	changesRetry time.Duration
	feedLive     bool      // the feed's query has answered and not failed since
	feedSince    time.Time // when it last became live: snapshots derived before may miss changes
	feedAttempt  uint64
	feedSub      rx.Subscription
	feedTimer    rx.Subscription
	pending      map[string]struct{} // modules to re-read: bounded by the modules there are
	wake         chan struct{}       // one token: pending has modules
	stop         chan struct{}       // closed by Close
	stopCtx      context.Context     // cancelled by Close: the parent of the service's own calls (stopped)
	cancelStop   context.CancelFunc
	absorberDone chan struct{}
	patchSeq     uint64
	patches      []patch // made while a derivation runs: re-applied over its result

	// The journal's tail and the announcements' retry (tailer).
	journalPeriod  time.Duration // <= 0: no tail
	maintPeriod    time.Duration // how often the tailer runs
	journalNext    uint64        // the next journal entry to read (0: the head is not known yet)
	tailBegan      time.Time     // the moment the tail reads the journal from (zero: none yet)
	tailArmed      time.Time     // when the tail was started from a snapshot: its first round is due
	lastTail       time.Time     // when the last successful tail began
	tailKick       chan struct{} // one token: start a round now (the tail has just been started)
	tailFailing    bool
	tailFailure    string
	trimmedPlace   uint64                    // the tail's place a trim removed, once logged
	pendingJournal map[string]pendingEntry   // by module key: records named on the journal, not yet seen committed
	unannounced    map[string]landing.Record // by module key: writes whose announcement failed, retried
	announceFails  atomic.Int64              // failed announcement attempts
	tailerDone     chan struct{}
}

// pendingEntry is a record the journal named that was not committed when
// its module was re-read: its commit may still be running.
type pendingEntry struct {
	record    string
	firstSeen time.Time
}

// patch is one module's latest record: re-read after the change feed named
// it, or written here (local).
type patch struct {
	seq   uint64
	key   string
	rec   landing.Record
	found bool
	local bool
}

// derivation is what a flight of the slot records about its scan (its
// Meta): the write generation it reads, and how to stop it.
type derivation struct {
	gen     uint64
	mark    uint64 // patchSeq when it started: later patches are re-applied over its result
	started time.Time

	prev *derivation   // the derivation started before this one: its scan returns before this one's starts
	done chan struct{} // closed when this derivation's scan has returned

	mu         sync.Mutex
	cancelScan context.CancelFunc // nil until the scan starts
	superseded bool
}

// errSuperseded ends a derivation that a newer one replaced. Read's callers
// never see it: they join the successor.
var errSuperseded = errors.New("registry: the activation derivation was superseded by a newer one")

// supersede cancels d's scan: a newer derivation will answer its readers.
func (d *derivation) supersede() {
	d.mu.Lock()
	d.superseded = true
	cancel := d.cancelScan
	d.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// scanning records the scan's cancel, calling it at once if d was
// superseded before its scan started.
func (d *derivation) scanning(cancel context.CancelFunc) {
	d.mu.Lock()
	d.cancelScan = cancel
	superseded := d.superseded
	d.mu.Unlock()
	if superseded {
		cancel()
	}
}

func (d *derivation) wasSuperseded() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.superseded
}

// NewServedActivation serves the activation of l. It panics, naming the
// argument, when l is nil: the service's own goroutines start here, and one
// of them would otherwise end the process on it.
func NewServedActivation(l *landing.ModuleLanding, opts ServedOptions) *ServedActivation {
	if l == nil {
		panic("registry: NewServedActivation: the *landing.ModuleLanding is nil (landing.NewModuleLanding makes one)")
	}
	s := &ServedActivation{landing: l, clk: opts.Clock, freshness: opts.Freshness, budget: opts.DerivationBudget, log: opts.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.clk == nil {
		s.clk = clock.New()
	}
	if s.freshness <= 0 {
		s.freshness = DefaultFreshness
	}
	if s.budget <= 0 {
		s.budget = DefaultDerivationBudget
	}
	s.reconcile = orDuration(opts.Reconcile, DefaultReconcile)
	s.changeBudget = orDuration(opts.ChangeBudget, DefaultChangeBudget)
	s.changesRetry = orDuration(opts.ChangesRetry, DefaultChangesRetry)
	s.stop = make(chan struct{})
	s.stopCtx, s.cancelStop = context.WithCancel(context.Background())
	switch {
	case opts.JournalPeriod < 0:
		s.maintPeriod = s.freshness / 6
	case opts.JournalPeriod == 0:
		s.journalPeriod, s.maintPeriod = s.freshness/6, s.freshness/6
	default:
		s.journalPeriod, s.maintPeriod = opts.JournalPeriod, opts.JournalPeriod
	}
	s.pendingJournal = map[string]pendingEntry{}
	s.unannounced = map[string]landing.Record{}
	s.tailerDone = make(chan struct{})
	s.tailKick = make(chan struct{}, 1)
	if opts.Changes != nil {
		s.changes = opts.Changes
		s.changesNS = opts.ChangesNamespace
		if s.changesNS == "" {
			s.changesNS = DefaultChangesNamespace
		}
		s.changesQuery = "namespace:" + s.changesNS + " nodeType:" + ChangeNodeType
		s.pending = map[string]struct{}{}
		s.wake = make(chan struct{}, 1)
		s.absorberDone = make(chan struct{})
		go s.absorber()
		s.startFeed()
	}
	go s.tailer()
	return s
}

// Freshness is the bound within which other replicas' records are served.
func (s *ServedActivation) Freshness() time.Duration { return s.freshness }

// Derivations returns how many derivations (scans) this service has started.
func (s *ServedActivation) Derivations() int64 { return s.derivations.Load() }

// LastDerivation returns how long the last published derivation took,
// from its start to its publication (zero before the first).
func (s *ServedActivation) LastDerivation() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastTook
}

// Absorbed returns how many changed modules the change feed has patched
// into the snapshot.
func (s *ServedActivation) Absorbed() int64 { return s.absorbed.Load() }

// dueAfter is the age at which a snapshot is re-derived: Reconcile while
// the journal's tail covers it (tailCurrent), Freshness otherwise: the
// change feed is the fast path, and no bound rests on it.
func (s *ServedActivation) dueAfter(tailCurrent bool) time.Duration {
	if tailCurrent {
		return s.reconcile
	}
	return s.freshness
}

// tailCurrent reports whether the journal's tail covers a snapshot it
// covers (covers: journalCovers) now: a tail succeeded, or was started,
// within half of Freshness. Called with s.mu held.
func (s *ServedActivation) tailCurrent(covers bool) bool {
	return covers && s.clk.Since(latest(s.lastTail, s.tailArmed)) <= s.freshness/2
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// journalCovers reports whether the journal has been tailed since before
// snap's derivation started: every record committed since is then read by
// the tail. Called with s.mu held.
func (s *ServedActivation) journalCovers(snap Snapshot) bool {
	return !s.tailBegan.IsZero() && !s.tailBegan.After(snap.DerivedAt)
}

// coveredAt is the moment up to which this replica is known to serve every
// record committed on the volume: the start of its snapshot's derivation,
// or of the last journal tail since. Called with s.mu held.
func (s *ServedActivation) coveredAt(snap Snapshot) time.Time {
	if s.journalCovers(snap) && s.lastTail.After(snap.DerivedAt) {
		return s.lastTail
	}
	return snap.DerivedAt
}

// refreshAfter is the age at which a read starts a snapshot's
// re-derivation: its cadence (dueAfter) less the time the last derivation
// took and a quarter, so that the successor is published by the time the
// snapshot is due. A record another replica wrote just after a scan read
// its module is then served within the cadence, not the cadence plus a
// derivation — as long as a derivation takes under half the cadence;
// longer ones run back to back, one at a time, and absorption takes up to
// two of them. Called with s.mu held.
func (s *ServedActivation) refreshAfter(dueAfter time.Duration) time.Duration {
	return dueAfter - s.lastTook - s.lastTook/4
}

// dueReason is why a snapshot is due, read under s.mu together with the
// age it is due at, so that the log line says what that decision saw.
type dueReason struct {
	after       time.Duration // refreshAfter
	tailCurrent bool          // due on the Reconcile cadence
	covers      bool          // journalCovers
	lastTail    time.Time
	tailArmed   time.Time
	tailFailure string
}

// due returns the age at which a read starts snap's re-derivation
// (refreshAfter) and what it was decided from, journalCovers read once: it
// runs on every read (every poll) under s.mu. Called with s.mu held.
func (s *ServedActivation) due(snap Snapshot) dueReason {
	covers := s.journalCovers(snap)
	current := s.tailCurrent(covers)
	return dueReason{after: s.refreshAfter(s.dueAfter(current)), tailCurrent: current, covers: covers,
		lastTail: s.lastTail, tailArmed: s.tailArmed, tailFailure: s.tailFailure}
}

// uncovered returns how long ago the moment is up to which sn is known to
// serve every committed record, and the bound readiness holds it to:
// Freshness, plus (while no journal tail covers it) the last derivation's
// duration, which a re-derivation due at Freshness needs to publish.
func (s *ServedActivation) uncovered(sn Snapshot) (age, bound time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bound = s.freshness
	if !s.journalCovers(sn) {
		bound += s.lastTook
	}
	return s.clk.Since(s.coveredAt(sn)), bound
}

// Read returns the served activation. With a snapshot it answers at once
// (starting one shared re-derivation if the snapshot is due); without one
// (at start, or right after a local write) it waits for the derivation in
// flight. Callers bound the wait, e.g. with rx.TimeoutStage; giving up does
// not stop the derivation.
func (s *ServedActivation) Read() rx.Observable[Snapshot] {
	return rx.Defer(func() rx.Observable[Snapshot] {
		snap, gen, has := s.readNow()
		if has {
			return rx.Return(snap)
		}
		f, snap, ok := s.claimCold(gen)
		if ok {
			return rx.Return(snap)
		}
		if f == nil {
			return rx.Throw[Snapshot](landing.ErrClosed)
		}
		return rx.Catch(f.Result(), func(err error) rx.Observable[Snapshot] {
			if errors.Is(err, errSuperseded) {
				return s.Read() // a newer derivation holds the slot: join it
			}
			return rx.Throw[Snapshot](err)
		})
	})
}

// readNow is Read when there is a snapshot: it returns it (starting one
// shared re-derivation if it is due) and true. Without one it returns the
// write generation a cold read claims, and false.
func (s *ServedActivation) readNow() (Snapshot, uint64, bool) {
	s.mu.Lock()
	snap, has, gen := s.snap, s.has, s.gen
	due := s.due(snap)
	s.mu.Unlock()
	if !has {
		return Snapshot{}, gen, false
	}
	if s.clk.Since(snap.DerivedAt) >= due.after {
		if _, started := s.claimFor(gen, false); started {
			s.dueLogged(snap, due)
		}
	}
	return snap, gen, true
}

// inFlight returns the result of the derivation in flight, or an empty
// stream when none is running.
func (s *ServedActivation) inFlight() rx.Observable[Snapshot] {
	if f := s.inflight.Current(); f != nil {
		return f.Result()
	}
	return rx.Empty[Snapshot]()
}

// Snapshot returns the current snapshot, if any, without starting anything.
func (s *ServedActivation) Snapshot() (Snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap, s.has
}

// derivationFlight is one derivation in the slot.
type derivationFlight = flight.Flight[Snapshot, *derivation]

// claimCold is claim for a reader that found no snapshot: when the slot is
// empty because a derivation for gen has published and left it since the
// reader looked, the snapshot it published is the answer (publishing
// happens before the slot is released), not a second derivation.
func (s *ServedActivation) claimCold(gen uint64) (*derivationFlight, Snapshot, bool) {
	f, snap, ok, _ := s.claimIn(gen, true)
	return f, snap, ok
}

// claim returns the derivation for write generation gen: the one in flight
// if it is at least that recent, else a new one it starts.
func (s *ServedActivation) claim(gen uint64) *derivationFlight {
	f, _ := s.claimFor(gen, false)
	return f
}

// dueLogged says why a read started a re-derivation of snap: at Warn when
// the journal is tailed but its tail did not cover the snapshot (its last
// success is more than half of Freshness ago, or it never covered this
// snapshot), which makes the snapshot due at Freshness instead of on the
// Reconcile cadence; at Info otherwise. due is what the read decided from.
func (s *ServedActivation) dueLogged(snap Snapshot, due dueReason) {
	attrs := []slog.Attr{slog.Uint64("snapshot", snap.Seq), slog.Duration("age", s.clk.Since(snap.DerivedAt)), slog.Duration("startedAfter", due.after),
		slog.Bool("journalCovers", due.covers)}
	if !due.lastTail.IsZero() {
		attrs = append(attrs, slog.Duration("lastTailAgo", s.clk.Since(due.lastTail)))
	}
	if !due.tailArmed.IsZero() {
		attrs = append(attrs, slog.Duration("tailArmedAgo", s.clk.Since(due.tailArmed)))
	}
	if due.tailFailure != "" {
		attrs = append(attrs, slog.String("tailFailure", due.tailFailure))
	}
	level, msg := slog.LevelInfo, "registry: re-deriving the activation: the snapshot is due"
	if s.journalPeriod > 0 && !due.tailCurrent {
		level, msg = slog.LevelWarn, "registry: re-deriving the activation at Freshness: the journal's tail has not covered the snapshot within half of Freshness"
	}
	s.log.LogAttrs(context.Background(), level, msg, attrs...)
}

// claimFor claims the derivation for gen, and reports whether this call
// started it.
func (s *ServedActivation) claimFor(gen uint64, cold bool) (*derivationFlight, bool) {
	f, _, _, started := s.claimIn(gen, cold)
	return f, started
}

func (s *ServedActivation) claimIn(gen uint64, cold bool) (_ *derivationFlight, _ Snapshot, _ bool, started bool) {
	var published Snapshot
	meta := func() (*derivation, bool) {
		if cold {
			// Checked after the slot was seen without a flight for gen:
			// one that left it had published first.
			s.mu.Lock()
			snap, has, now := s.snap, s.has, s.gen
			s.mu.Unlock()
			if has && now == gen {
				published = snap
				return nil, false
			}
		}
		return &derivation{gen: gen, started: s.clk.Now(), done: make(chan struct{})}, true
	}
	f, replaced, owner := s.inflight.ClaimIf(meta, func(cur *derivationFlight) bool { return cur.Meta.gen >= gen })
	if f == nil {
		return nil, published, true, false
	}
	if !owner {
		return f, Snapshot{}, false, false
	}
	if replaced != nil {
		// A local write made the replaced derivation's listing useless:
		// stop it. This one scans once it has stopped (see start).
		replaced.Meta.supersede()
	}
	if !s.start(f) {
		s.inflight.Release(f)
		f.Fail(landing.ErrClosed) // readers that joined it meanwhile
		return nil, Snapshot{}, false, false
	}
	return f, Snapshot{}, false, true
}

// start runs f's derivation on the service's own subscription: no request
// can cancel it.
func (s *ServedActivation) start(f *derivationFlight) bool {
	d := f.Meta
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.running.Add(1)
	d.prev = s.last
	s.last = d
	d.mark = s.patchSeq
	// The snapshot served now (even one a local write dropped) tells the
	// scan which records it has read already: reconciliation re-reads
	// only the modules whose newest record is another.
	base := s.snap
	s.mu.Unlock()
	s.derivations.Add(1)
	scan := rx.Create(func(ctx context.Context, o rx.Observer[landing.Activation]) {
		ctx, cancel := context.WithCancel(ctx)
		d.scanning(cancel)
		go func() {
			defer close(d.done)
			defer cancel()
			if prev := d.prev; prev != nil {
				d.prev = nil // the chain of superseded derivations is not kept
				select {
				case <-prev.done:
				default:
					s.log.LogAttrs(ctx, slog.LevelDebug, "registry: a derivation waits for the previous scan to return (one scan at a time)")
					select {
					case <-prev.done:
					case <-ctx.Done(): // bounded by this derivation's own budget
						o.OnError(fmt.Errorf("registry: waiting for the previous derivation's scan to return: %w", ctx.Err()))
						return
					}
				}
			}
			reconcile := s.landing.Reconcile
			if s.journalPeriod > 0 {
				// The journal's entries since base was derived name every
				// module written since: O(changed), not O(modules).
				reconcile = s.landing.ReconcileChanges
			}
			// The flat copy of the base's modules is O(modules), as the
			// derivation itself is.
			act, err := reconcile(ctx, base.Activation())
			if err != nil {
				o.OnError(err)
				return
			}
			o.OnNext(act)
			o.OnCompleted()
		}()
	})
	var (
		snap Snapshot
		got  bool
	)
	rx.TimeoutStage(scan, "activation derivation", s.budget, s.clk).Subscribe(rx.NewObserver(
		func(a landing.Activation) {
			s.derived(nil)
			snap, got = s.publish(d, a, contentDigest(a.Modules)), true
		},
		func(err error) {
			if d.wasSuperseded() {
				// Not a failure: its readers join the successor.
				s.release(f)
				s.running.Done()
				f.Fail(errSuperseded)
				return
			}
			s.derived(err)
			s.release(f)
			s.running.Done()
			f.Fail(err)
		},
		func() {
			// Published before the slot is freed: a cold reader that finds
			// it free answers from this snapshot (see claimCold).
			s.release(f)
			s.running.Done()
			if !got {
				f.Fail(errors.New("registry: the activation derivation ended without a listing"))
				return
			}
			f.Resolve(snap)
		},
	))
	return true
}

// derived notes how a derivation ended, logging the transitions: the first
// failure (from then on the snapshot served grows stale, and says how old it
// is) and the first success after failures.
func (s *ServedActivation) derived(err error) {
	s.mu.Lock()
	was, since := s.failing, s.failedSince
	snap, has := s.snap, s.has
	if err != nil {
		s.failure = err.Error()
		if !s.failing {
			s.failing, s.failedSince = true, s.clk.Now()
		}
	} else {
		s.failing, s.failure = false, ""
	}
	s.mu.Unlock()
	switch {
	case err != nil && !was:
		attrs := []slog.Attr{slog.String("error", err.Error())}
		if has {
			attrs = append(attrs, slog.Uint64("snapshot", snap.Seq), slog.Duration("snapshotAge", s.clk.Since(snap.DerivedAt)))
		}
		s.log.LogAttrs(context.Background(), slog.LevelWarn,
			"registry: deriving the activation list failed; the snapshot served grows stale until a derivation succeeds", attrs...)
	case err == nil && was:
		s.log.LogAttrs(context.Background(), slog.LevelInfo,
			"registry: deriving the activation list succeeded again", slog.Duration("failingFor", s.clk.Since(since)))
	}
}

// lastFailure says, for the log, whether and since when derivations fail.
func (s *ServedActivation) lastFailure() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.failing {
		return "the last derivation succeeded"
	}
	return "derivations failing since " + s.failedSince.UTC().Format(time.RFC3339) + ": " + s.failure
}

// publish installs a derivation's result unless a local write came after it
// started, and returns the snapshot its readers receive either way.
func (s *ServedActivation) publish(d *derivation, a landing.Activation, content [32]byte) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	snap := newSnapshot(a, s.seq, d.started, content)
	// Modules the change feed re-read while d scanned may have been read
	// by d before they changed: the newer record wins.
	for _, p := range s.patches {
		if p.seq > d.mark {
			snap, _ = patchedSnap(snap, []patch{p})
		}
	}
	s.lastTook = s.clk.Since(d.started)
	if s.gen == d.gen {
		s.snap, s.has = snap, true
		s.patches = s.patches[:0]
		s.startTail(snap)
	}
	return snap
}

// startTail places the journal's tail at the place on the journal snap was
// derived at (ReconcileChanges) when the tail does not cover snap yet, and
// runs its round at once: the tail then covers snap from its derivation's
// start, however long that took. A tail that began from its own reading of
// the journal's head, on its own goroutine, began after the first
// derivation had started (or failed first), so it never covered the first
// snapshot, which was then re-derived within Freshness less its
// derivation's duration instead of on the Reconcile cadence: on a volume
// where the first derivation is slow (object storage), during a short
// load run. A later snapshot whose place is further on (a full walk past
// a gap in the journal) moves the tail forward. Called with s.mu held.
func (s *ServedActivation) startTail(snap Snapshot) {
	from := snap.JournalFrom()
	if s.journalPeriod <= 0 || from == 0 {
		return
	}
	if s.journalCovers(snap) {
		s.journalNext = max(s.journalNext, from)
		return
	}
	// Re-reading entries the tail read already is harmless: a module's
	// newer record wins.
	s.journalNext = from
	s.tailBegan, s.tailArmed, s.lastTail = snap.DerivedAt, s.clk.Now(), time.Time{}
	select {
	case s.tailKick <- struct{}{}:
	default:
	}
}

// release frees f's slot, only if the slot still holds f.
func (s *ServedActivation) release(f *derivationFlight) {
	if s.inflight.Release(f) {
		s.mu.Lock()
		if s.inflight.Current() == nil {
			s.patches = s.patches[:0] // no derivation left to re-apply them over
		}
		s.mu.Unlock()
	}
}

// invalidate drops the snapshot after a local write, before the write is
// reported to its caller.
func (s *ServedActivation) invalidate() {
	s.mu.Lock()
	s.gen++
	s.has = false
	s.mu.Unlock()
}

// Land lands a module version (see ModuleLanding.Land); this replica serves the result on its next read (see wrote).
func (s *ServedActivation) Land(ctx context.Context, module, version string, archive []byte) (landing.Record, error) {
	return s.write(s.landing.Land(ctx, module, version, archive))
}

// LandArchive lands a module version from an archive read in place (see
// ModuleLanding.LandArchive). The record it answers is served on this
// replica's next read and announced, also when the version had landed
// already (created false): another replica may have landed it and died
// before announcing it, and this answer says it is published.
func (s *ServedActivation) LandArchive(ctx context.Context, module, version string, archive io.ReaderAt, size int64) (landing.Record, bool, error) {
	rec, created, err := s.landing.LandArchive(ctx, module, version, archive, size)
	switch {
	case err != nil:
	case created:
		s.wrote(rec)
	default:
		// Nothing was written: a patch (a no-op when the snapshot holds
		// the record or a newer one), never a dropped snapshot.
		s.patch(patch{key: moduleKey(rec.Module), rec: rec, found: true, local: true})
		s.announce(rec)
	}
	return rec, created, err
}

// Shelve shelves a module version (see ModuleLanding.Shelve); this replica serves the result on its next read (see wrote).
func (s *ServedActivation) Shelve(ctx context.Context, module, version string) (landing.Record, error) {
	return s.write(s.landing.Shelve(ctx, module, version))
}

// Uninstall uninstalls a module (see ModuleLanding.Uninstall); this replica serves the result on its next read (see wrote).
func (s *ServedActivation) Uninstall(ctx context.Context, module string) (landing.Record, error) {
	return s.write(s.landing.Uninstall(ctx, module))
}

// Remove removes a module (see ModuleLanding.Remove); this replica serves the result on its next read (see wrote).
func (s *ServedActivation) Remove(ctx context.Context, module string) (landing.Record, error) {
	return s.write(s.landing.Remove(ctx, module))
}

func (s *ServedActivation) write(r landing.Record, err error) (landing.Record, error) {
	if err == nil {
		s.wrote(r)
	}
	return r, err
}

// wrote makes a local write served on this replica's next read and
// announces it to the others. With the change feed the snapshot is patched
// with the record written (O(1) reads; a derivation in flight re-applies the
// patch over its result, the newer record winning), so a publication never
// makes readers wait for a derivation. Without it the snapshot is dropped
// and the next read derives anew.
func (s *ServedActivation) wrote(r landing.Record) {
	if s.changes != nil {
		s.patch(patch{key: moduleKey(r.Module), rec: r, found: true, local: true})
	} else {
		s.invalidate()
	}
	s.announce(r)
}

// Close refuses new derivations, stops the change feed, cancels the
// derivation in flight (its readers get landing.ErrClosed) and waits,
// bounded by ctx, for its scan to return. It is idempotent.
func (s *ServedActivation) Close(ctx context.Context) error {
	s.mu.Lock()
	wasClosed := s.closed
	s.closed = true
	feed, timer := s.feedSub, s.feedTimer
	s.feedSub, s.feedTimer = nil, nil
	s.mu.Unlock()
	if !wasClosed {
		close(s.stop)
		s.cancelStop()
	}
	if feed != nil {
		feed.Unsubscribe()
	}
	if timer != nil {
		timer.Unsubscribe()
	}
	if f := s.inflight.Current(); f != nil {
		f.Meta.supersede() // nothing succeeds it: its readers re-read and find the service closed
	}
	done := make(chan struct{})
	go func() {
		s.running.Wait()
		if s.absorberDone != nil {
			<-s.absorberDone
		}
		<-s.tailerDone
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.Join(errors.New("registry: closing the served activation: a cancelled derivation's scan has not returned"), ctx.Err())
	}
}
