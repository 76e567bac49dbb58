package memstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/internal/liveindex"
	"github.com/meshrx/meshrx/mesh/internal/mailbox"
	"github.com/meshrx/meshrx/rx"
)

// DefaultQueueFrames is the bound of a subscriber's queue when
// Options.QueueFrames is zero.
const DefaultQueueFrames = mailbox.DefaultBound

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Clock stamps LastModified and bounds each query's Initial; nil means
	// the real clock.
	Clock clock.Clock
	// Budgets bound the store's waits; the zero value means
	// mesh.DefaultBudgets. Queries use Budgets.QueryInitial.
	Budgets mesh.Budgets
	// Router routes queries and resolves global satellites; nil means
	// mesh.NewRouter with GatedTypes. One not made by mesh.NewRouter
	// (&mesh.Router{}) is an *mesh.OptionsError.
	Router *mesh.Router
	// Providers are fanned in beside the store on every routed query, such as
	// static configuration.
	Providers []mesh.Provider
	// Logger receives the store's log lines; nil means slog.Default().
	Logger *slog.Logger
	// QueueFrames bounds each subscriber's queue: the frames of a live
	// query, or the notices of a Changes subscription, written but not yet
	// delivered. A subscriber that falls further behind has its queue
	// collapsed into one delivery (a live query's Reset with the current
	// result) sent when it catches up. Zero means DefaultQueueFrames.
	QueueFrames int
	// GatedTypes are node types kept in the security materialisation
	// (SecurityNodes) and never narrowed by the default router besides
	// mesh.SecurityTypes, which are always kept: a zero Options serves an
	// access fold safely.
	GatedTypes []string
}

var (
	_ mesh.Store = (*Store)(nil)
	_ io.Closer  = (*Store)(nil) // meshtest closes a store to check that it then answers "unavailable"
)

// providerName is the name the store's own provider has in a fan-in.
const providerName = "memstore"

// Store is a mesh.Store kept in process memory. It is safe for concurrent
// use. Its zero value is not usable: call New. Every method of a nil or
// zero Store, and every method given a nil context, fails with a
// *mesh.ArgumentError (Stats answers zero counts).
//
// Nodes the store returns share their Content with the store: treat it as
// read-only.
type Store struct {
	clk     clock.Clock
	budgets mesh.Budgets
	router  *mesh.Router
	querier *mesh.Querier
	log     *slog.Logger
	// queueFrames bounds each subscriber's mailbox.
	queueFrames int

	// mu guards the partitions and closed. It is held only for in-memory
	// work bounded by the data touched (one index update and the live
	// queries' classification for a write, one anchored read for a query),
	// never while delivering to an observer, logging or doing I/O.
	mu    storeLock
	parts map[string]*partition // schema → partition
	// partList lists the partition schemas of parts, sorted; replaced
	// whole when one is added.
	partList []string
	closed   bool
	// routing is partList and closed as of the last write that changed
	// them, published for routing a query without the lock: a query's
	// only lock wait is its Initial's, bounded by Budgets.QueryInitial.
	routing atomic.Pointer[routingView]

	// liveMu guards the live queries and the Changes subscribers; it is
	// taken inside mu (read or write), never the other way round.
	liveMu  sync.Mutex
	live    *liveindex.Index[*liveQuery]
	changes mailbox.Notices // the Changes subscriptions

	// closing fires once, on Close, and ends the Options.Providers' part of
	// every query: they may stay live forever.
	closing *closeSignal

	sec security // guarded by mu

	evaluations, skipped, scanned, resets atomic.Int64
}

// New returns an empty Store. It fails when opts.Budgets are set but do not
// nest, or when the default router cannot be built.
func New(opts Options) (*Store, error) {
	s := &Store{
		mu:          newStoreLock(),
		clk:         opts.Clock,
		budgets:     opts.Budgets,
		router:      opts.Router,
		log:         opts.Logger,
		queueFrames: opts.QueueFrames,
		parts:       map[string]*partition{},
		live:        liveindex.New[*liveQuery](),
		closing:     newCloseSignal(),
		sec:         newSecurity(mesh.WithSecurityTypes(opts.GatedTypes)),
	}
	s.routing.Store(&routingView{})
	if s.clk == nil {
		s.clk = clock.New()
	}
	if s.budgets == (mesh.Budgets{}) {
		s.budgets = mesh.DefaultBudgets()
	}
	if err := s.budgets.Validate(); err != nil {
		return nil, fmt.Errorf("memstore: %w", err)
	}
	if s.router != nil {
		// Route refuses a Router not made by mesh.NewRouter (&mesh.Router{}),
		// whatever the query: the store could then neither read nor write.
		if _, err := s.router.Route(&mesh.Query{Path: "probe"}, nil); err != nil {
			return nil, &mesh.OptionsError{Setting: "memstore: Options.Router", Problem: "was not made by mesh.NewRouter; leave it nil for the default"}
		}
	} else {
		r, err := mesh.NewRouter(mesh.RouterConfig{GatedTypes: opts.GatedTypes})
		if err != nil {
			return nil, fmt.Errorf("memstore: default router: %w", err)
		}
		s.router = r
	}
	for i, p := range opts.Providers {
		if p == nil {
			return nil, &mesh.OptionsError{Setting: fmt.Sprintf("memstore: Options.Providers[%d]", i), Problem: "is nil"}
		}
	}
	// Close ends the providers' parts of each query; the store's own part
	// completes once its queued frames are delivered, and with it the query.
	providers := make([]mesh.Provider, len(opts.Providers))
	for i, p := range opts.Providers {
		providers[i] = untilClosed{Provider: p, closing: s.closing.Observable()}
	}
	s.querier = &mesh.Querier{Backend: backend{s}, Router: s.router, Providers: providers,
		Clock: s.clk, InitialBudget: s.budgets.QueryInitial,
		// Its full answers come sorted and limited (read) and its live
		// frames say Added, Updated or Removed against its own result: with
		// no Providers a query needs no fan-in, whose copy of the result
		// would double what a large live query holds.
		Merged: true}
	switch {
	case s.queueFrames == 0:
		s.queueFrames = DefaultQueueFrames
	case s.queueFrames < 0:
		return nil, &mesh.OptionsError{Setting: "memstore: Options.QueueFrames", Problem: fmt.Sprintf("is %d; it must be positive, or zero for the default", s.queueFrames)}
	}
	s.changes.Bound = s.queueFrames
	if s.log == nil {
		s.log = slog.Default()
	}
	s.changes.Log = s.log
	return s, nil
}

// Stats counts the store's work.
type Stats struct {
	Nodes       int   // nodes stored
	LiveQueries int   // live queries registered now
	Evaluations int64 // (write, live query) pairs in which the written node was matched against the query
	Skipped     int64 // (write, live query) pairs settled without matching: the node's type, partition or place in the tree cannot be in the query's result
	Scanned     int64 // nodes examined by Initial reads, matching or not
	Resets      int64 // Reset frames sent to live queries whose subscriber fell behind past Options.QueueFrames
}

// Stats returns the counters so far.
func (s *Store) Stats() Stats {
	if s.usable("Stats", nil, false) != nil {
		return Stats{}
	}
	s.mu.RLock()
	nodes := 0
	for _, p := range s.parts {
		nodes += p.size
	}
	s.mu.RUnlock()
	s.liveMu.Lock()
	live := s.live.Len()
	s.liveMu.Unlock()
	return Stats{
		Nodes:       nodes,
		LiveQueries: live,
		Evaluations: s.evaluations.Load(),
		Skipped:     s.skipped.Load(),
		Scanned:     s.scanned.Load(),
		Resets:      s.resets.Load(),
	}
}

// Close ends every live query (each completes once its queued frames are
// delivered: an idle one before Close returns), completes every Changes subscription likewise, and releases
// the stored nodes. Afterwards reads fail with a *mesh.UnavailableError
// wrapping ErrClosed, and writes with ErrClosed. Closing twice is harmless.
func (s *Store) Close() error {
	if err := s.usable("Close", nil, false); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.parts, s.partList = nil, nil
	s.routing.Store(&routingView{closed: true})
	s.liveMu.Lock()
	var ended []*liveQuery
	s.live.All(func(lq *liveQuery) {
		lq.done = true
		ended = append(ended, lq)
	})
	s.live = liveindex.New[*liveQuery]()
	var startQ []*liveQuery
	for _, lq := range ended {
		if lq.box.End() {
			startQ = append(startQ, lq)
		}
	}
	startW := s.changes.Close()
	s.liveMu.Unlock()
	s.mu.Unlock()

	// An idle query has only its completion to deliver: it completes here,
	// before Close returns; a busy one after its queued frames, by its drain.
	for _, lq := range startQ {
		s.drain(lq)
	}
	startW.Start()
	// Ending a provider's part delivers a value into its query's fan-in,
	// which waits while a busy subscriber's is full: not on Close's
	// goroutine.
	go s.closing.close()
	s.log.Debug("memstore: closed", "liveQueriesEnded", len(ended))
	return nil
}

// Changes announces every write after it is visible to readers, in the order
// the writes were applied. It is hot: a subscriber sees the writes made
// after it subscribed. A Put that changes nothing announces nothing. A write
// that changes a node's type is announced with NodeType "" (every reader
// must re-read), since both the old and the new type may matter.
//
// Each subscription is delivered from its own queue, never on the writer's
// goroutine. A subscriber that falls behind by more than
// Options.QueueFrames notices receives, in their place, one notice with an
// empty Path and NodeType, Op WriteUpdate: anything may have changed, read
// again. Close completes every subscription.
func (s *Store) Changes() rx.Observable[mesh.ChangeNotice] {
	if err := s.usable("Changes", nil, false); err != nil {
		return rx.Throw[mesh.ChangeNotice](err)
	}
	return s.changes.Observable()
}

// announce queues n for every Changes subscriber. The caller holds mu for
// writing; it returns the drains to start once mu is released.
func (s *Store) announce(n mesh.ChangeNotice) mailbox.Starts { return s.changes.Announce(n) }

// start starts the drains a write made due. It runs after mu is released,
// and never waits for a subscriber.
func (s *Store) start(queries []*liveQuery, watchers mailbox.Starts) {
	for _, lq := range queries {
		go s.drain(lq)
	}
	watchers.Start()
}

// schemaOf returns the schema that holds path, and whether it is a global
// satellite schema. A path whose first segment starts with _ resolves
// through the router's registry of global satellites. A partition whose
// name no store can hold (mesh.PartitionNameProblem), or whose schema is a
// global satellite's, is a *mesh.PathError.
func (s *Store) schemaOf(path string) (schema string, global bool, err error) {
	first := mesh.Partition(path)
	if !strings.HasPrefix(first, "_") {
		if why := mesh.PartitionNameProblem(first); why != "" {
			return "", false, &mesh.PathError{Path: path, Reason: fmt.Sprintf("partition %q: %s", first, why)}
		}
		schema := mesh.FoldName(first)
		if s.router.GlobalSchema(schema) {
			return "", false, &mesh.PathError{Path: path, Reason: fmt.Sprintf(
				"partition %q would share schema %q with a global satellite, which no fan-out may read", first, schema)}
		}
		return schema, false, nil
	}
	route, err := s.router.Route(&mesh.Query{Path: first}, nil)
	if err != nil || route.Kind != mesh.Pinned {
		return "", true, &mesh.UnroutablePathError{Path: path, Segment: first}
	}
	return route.Schemas[0], true, nil
}

// partitionSchemas returns the partition schemas stored, sorted; global
// satellite schemas are not partitions. The caller holds mu and must not
// change the slice: it is kept, not built per call, so routing a query
// costs nothing per partition.
func (s *Store) partitionSchemas() []string { return s.partList }

// addPartition stores a new partition. The caller holds mu for writing.
// The sorted list of partitions is replaced, not changed in place: readers
// may still hold the previous one.
func (s *Store) addPartition(p *partition) {
	s.parts[p.schema] = p
	if p.global {
		return
	}
	i, _ := slices.BinarySearch(s.partList, p.schema)
	s.partList = slices.Insert(slices.Clip(s.partList), i, p.schema)
	s.routing.Store(&routingView{schemas: s.partList})
}

// routingView is what routing a query reads of the store: its partition
// schemas (shared, never changed in place) and whether it is closed.
type routingView struct {
	schemas []string
	closed  bool
}

func unavailable(op string) error {
	return &mesh.UnavailableError{Op: op, Err: ErrClosed}
}

// Settle waits until every live query and Changes subscription has
// received what the writes that returned before the call queued for it (as
// frames, or a Reset standing for them), or until ctx ends. Writes never
// wait for subscribers; Settle is for a caller that wants its observers up
// to date before it goes on (a test, a drain before shutdown). When ctx ends
// first it returns a *SettleError saying how many subscribers were behind.
// Called from inside an observer's OnNext it waits for that delivery too,
// so it can only end with ctx there.
func (s *Store) Settle(ctx context.Context) error {
	if err := s.usable("Settle", ctx, true); err != nil {
		return err
	}
	s.liveMu.Lock()
	var pending []<-chan struct{}
	s.live.All(func(lq *liveQuery) {
		if c := lq.box.Settled(); c != nil {
			pending = append(pending, c)
		}
	})
	s.liveMu.Unlock()
	pending = append(pending, s.changes.Settled()...)
	behind, err := mailbox.AwaitAll(ctx, pending)
	if err != nil {
		return &SettleError{Behind: behind, Err: err}
	}
	return nil
}
