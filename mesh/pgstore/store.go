package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/internal/liveindex"
	"github.com/meshrx/meshrx/mesh/internal/mailbox"
	"github.com/meshrx/meshrx/rx"
)

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Clock stamps LastModified, bounds each query's Initial (with
	// Budgets.QueryInitial) and every statement the store runs (a timer of
	// Clock cancels a statement whose budget is spent: see BudgetError),
	// times FeedCheck and paces listener reconnects; nil means the real
	// clock.
	Clock clock.Clock
	// Budgets bound the store's waits; the zero value means
	// mesh.DefaultBudgets. Reads are bounded by QueryInitial, writes by
	// Operation.
	Budgets mesh.Budgets
	// Router routes queries and resolves global satellites; nil means
	// mesh.NewRouter with GatedTypes and Logger. One not made by
	// mesh.NewRouter (&mesh.Router{}) is an *mesh.OptionsError.
	Router *mesh.Router
	// Providers are fanned in beside the store on every routed query, such
	// as static configuration.
	Providers []mesh.Provider
	// Logger receives the store's log lines; nil means slog.Default().
	Logger *slog.Logger
	// GatedTypes are node types folded into public.security_fold and
	// never narrowed by the default router besides mesh.SecurityTypes,
	// which are always folded: a zero Options serves an access fold safely. Open adds those the database lacks (and
	// backfills their rows); it never removes one, so a database folds every
	// type any store opened on it was given.
	GatedTypes []string
	// MaxConns caps the connection pool; 0 means pool_max_conns from the URL,
	// or pgxpool's default; negative is refused. The listener's connection
	// is not counted.
	MaxConns int32
	// QueryTracer sees every statement of the connection pool (reads and
	// writes; not the listener's LISTEN).
	QueryTracer pgx.QueryTracer
	// QueueFrames bounds each Changes subscriber's queue: the notices it has
	// not taken yet. A subscriber that falls further behind gets one gap
	// notice in their place (see Changes). Zero means DefaultQueueFrames.
	QueueFrames int
	// SkipMigrate makes Open change no schema: it applies no migration and
	// starts no key backfill, and refuses a database that lacks one of this
	// build's migrations (an error wrapping ErrNotMigrated, naming it). For
	// deploy pipelines that run MigrateURL first, with a role allowed to
	// change the schema, and start services with one that need not be.
	// GatedTypes are still added to the security fold.
	SkipMigrate bool
	// FeedCheck bounds how long the listener believes a silent connection:
	// after FeedCheck on Clock without a notice it pings the server, and a
	// ping not answered within Budgets.QueryInitial (what a read may take)
	// ends the connection like any other failure (Feed goes down, the
	// listener reconnects, every live query gets a Reset). A connection lost
	// without a FIN or RST (a network partition, a server host gone) is so
	// noticed within FeedCheck + QueryInitial (20s by default), not at TCP
	// keepalive's minutes while Feed says Connected and notices are lost. A
	// server that answers more slowly than a read's budget counts as gone.
	// Zero means DefaultFeedCheck; negative is refused.
	FeedCheck time.Duration
}

// DefaultFeedCheck is Options.FeedCheck when zero: a silent listener
// connection is pinged after 5s; with the default budgets a dead one is
// noticed within 20s. An idle store costs the server one empty statement
// per 5s.
const DefaultFeedCheck = 5 * time.Second

// DefaultQueueFrames is the bound of a Changes subscriber's queue when
// Options.QueueFrames is zero.
const DefaultQueueFrames = mailbox.DefaultBound

// Reconnect pacing of the listener: the first retry waits MinReconnectDelay,
// each further failure doubles the wait up to MaxReconnectDelay. The cap is
// short because nothing else tells the listener the database is back: with
// a long one, live queries stay without their feed for most of the cap after
// an outage (a 30 s cap kept the feed away 11.5 s after a 20 s stop).
const (
	MinReconnectDelay = 250 * time.Millisecond
	MaxReconnectDelay = 2 * time.Second
)

// closeBudget bounds Close's wait (on the store's clock) for the store's
// goroutines, which end promptly once their context is cancelled.
const closeBudget = 30 * time.Second

// listenerAppName is the application_name of the listener's connection.
const listenerAppName = "meshrx-pgstore-listener"

// providerName is the name the store's own provider has in a fan-in.
const providerName = "pgstore"

// Store is a mesh.Store and mesh.SecurityReader on PostgreSQL. It is safe
// for concurrent use. Make one with Open and release it with Close. Every
// method of a nil or zero Store, and every function or method of this
// package given a nil context or DB, fails with a *mesh.ArgumentError
// (Stats answers zero counts).
type Store struct {
	pool      *pgxpool.Pool
	listenCfg *pgx.ConnConfig
	clk       clock.Clock
	realClock bool // Options.Clock was nil: budgets are deadlines (see bounded)
	budgets   mesh.Budgets
	router    *mesh.Router
	querier   *mesh.Querier
	log       *slog.Logger

	// ctx ends when Close begins; every goroutine of the store watches it.
	ctx    context.Context
	cancel context.CancelFunc
	// ended ends once Close has ended the store's own live queries: it
	// ends the fan-in of Options.Providers, which may stay live forever.
	ended    context.Context
	setEnded context.CancelFunc

	// mu guards closed, live and wg.Add (so no goroutine starts after Close
	// has begun waiting). It is never held while calling an observer.
	mu     sync.Mutex
	closed bool
	live   *liveindex.Index[*liveQuery]
	wg     sync.WaitGroup

	schemas *schemaSet

	changes     mailbox.Notices // the Changes subscriptions
	queueFrames int
	feedCheck   time.Duration // Options.FeedCheck, defaulted
	feed        *rx.BehaviorSubject[FeedState]
	gated       []string // mesh.SecurityTypes and Options.GatedTypes: what the fold declares

	fences  *fences  // see fence.go
	senders *senders // see senders.go

	epoch    time.Time    // Open's time on clk: what stamp counts from
	lastRead atomic.Int64 // when the listener's connection last read (stamp)

	noticeToFrame, noticeDispatch latencyRecorder

	notices, requeries, skipped, reads, pointReads, noticeRows, resets, reconnects, lostReads atomic.Int64
}

// Open connects to the database at url (a postgres:// URL or key=value
// connection string), applies Migrate, adds Options.GatedTypes to the
// security fold, and starts the store's one listener connection on
// NotifyChannel. Open is bounded by ctx and by twice Budgets.Operation.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	if ctx == nil {
		return nil, nilArg("Open", "ctx")
	}
	s := &Store{
		clk:         opts.Clock,
		budgets:     opts.Budgets,
		router:      opts.Router,
		log:         opts.Logger,
		live:        newLiveIndex(),
		schemas:     newSchemaSet(),
		queueFrames: opts.QueueFrames,
		feedCheck:   opts.FeedCheck,
		feed:        rx.NewBehaviorSubject(FeedState{}),
		fences:      newFences(),
	}
	if s.clk == nil {
		s.clk, s.realClock = clock.New(), true
	}
	s.epoch = s.clk.Now()
	s.senders = newSenders()
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.budgets == (mesh.Budgets{}) {
		s.budgets = mesh.DefaultBudgets()
	}
	if s.queueFrames == 0 {
		s.queueFrames = DefaultQueueFrames
	} else if s.queueFrames < 0 {
		return nil, &mesh.OptionsError{Setting: "pgstore: Options.QueueFrames", Problem: fmt.Sprintf("is %d; it must be positive, or zero for the default", s.queueFrames)}
	}
	s.changes.Bound = s.queueFrames
	s.changes.Log = s.log
	if s.feedCheck == 0 {
		s.feedCheck = DefaultFeedCheck
	} else if s.feedCheck < 0 {
		return nil, &mesh.OptionsError{Setting: "pgstore: Options.FeedCheck", Problem: fmt.Sprintf("is %v; it must be positive, or zero for the default", s.feedCheck)}
	}
	if opts.MaxConns < 0 {
		return nil, &mesh.OptionsError{Setting: "pgstore: Options.MaxConns", Problem: fmt.Sprintf("is %d; it must be positive, or zero for the URL's pool_max_conns", opts.MaxConns)}
	}
	if err := s.budgets.Validate(); err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	for i, t := range opts.GatedTypes {
		if strings.TrimSpace(t) == "" {
			return nil, &mesh.OptionsError{Setting: fmt.Sprintf("pgstore: Options.GatedTypes[%d]", i), Problem: "is empty"}
		}
	}
	for i, p := range opts.Providers {
		if p == nil {
			return nil, &mesh.OptionsError{Setting: fmt.Sprintf("pgstore: Options.Providers[%d]", i), Problem: "is nil"}
		}
	}
	s.gated = mesh.WithSecurityTypes(opts.GatedTypes)
	if s.router != nil {
		// Route refuses a Router not made by mesh.NewRouter (&mesh.Router{}),
		// whatever the query: the store could then neither read nor write.
		if _, err := s.router.Route(&mesh.Query{Path: "probe"}, nil); err != nil {
			return nil, &mesh.OptionsError{Setting: "pgstore: Options.Router", Problem: "was not made by mesh.NewRouter; leave it nil for the default"}
		}
	} else {
		r, err := mesh.NewRouter(mesh.RouterConfig{GatedTypes: opts.GatedTypes, Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("pgstore: default router: %w", err)
		}
		s.router = r
	}
	s.ended, s.setEnded = context.WithCancel(context.Background())
	s.querier = &mesh.Querier{Backend: backend{s}, Router: s.router, Providers: slices.Clone(opts.Providers),
		Clock: s.clk, InitialBudget: s.budgets.QueryInitial, Merged: true}
	if len(opts.Providers) > 0 {
		// Without providers a query's stream ends with the store's part.
		s.querier.Until = s.endedSignal()
	}

	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parsing the database URL: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	// The statements sqlgen writes for content fields look expensive to the
	// planner, which would JIT-compile them on any sizeable table: seconds
	// of compilation for millisecond reads.
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	// The store's statements are few shapes with every value a parameter,
	// whose good plans (index conditions on the folded keys) do not depend
	// on the values. PostgreSQL's default keeps re-planning a statement
	// whose generic plan looks costlier than its custom plans, which for a
	// pinned read costs more than running it; a generic plan is planned
	// once per connection.
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	// A role's or database's default search_path does not apply to the
	// store's statements (see SearchPath).
	pinSearchPath(cfg.ConnConfig.RuntimeParams)
	// The pool's backends are the store's role: their notices are believed
	// without a lookup, for as long as any answer is (see senders.go).
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		s.senders.opened(s.clk.Now(), c.PgConn().PID())
		return nil
	}
	s.listenCfg = cfg.ConnConfig.Copy()
	s.listenCfg.Tracer = nil
	if s.listenCfg.RuntimeParams == nil {
		s.listenCfg.RuntimeParams = map[string]string{}
	}
	s.listenCfg.RuntimeParams["application_name"] = listenerAppName
	// A wait the listener cuts short (its silence check) must leave the
	// connection usable: a cancelled context sets a deadline on it rather
	// than sending the server a cancel request that could reach the next
	// statement, the ping (pgx's default, made explicit).
	s.listenCfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	dial := s.listenCfg.DialFunc
	s.listenCfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &stampedConn{Conn: c, s: s}, nil
	}
	if opts.QueryTracer != nil {
		cfg.ConnConfig.Tracer = opts.QueryTracer
	}

	budget := 2 * s.budgets.Operation
	openCtx, cancel, explain := s.bounded(ctx, budget, "opening the store (migrate, load schemas, listen)")
	defer cancel()
	pool, err := pgxpool.NewWithConfig(openCtx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: creating the connection pool: %w", err)
	}
	s.pool = pool
	conn, err := s.prepare(openCtx, s.gated, opts.SkipMigrate)
	if err != nil {
		pool.Close()
		if isConnectFailure(err) {
			return nil, fmt.Errorf("pgstore: open: %w", connectError(cfg.ConnConfig.Config.Copy(), explain(err)))
		}
		if err = explain(err); errors.As(err, new(*BudgetError)) {
			err = &mesh.UnavailableError{Op: "open the store", Err: err}
		}
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}

	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.feed.OnNext(FeedState{Connected: true})
	s.wg.Add(3)
	go s.listen(conn)
	go s.sendFences()
	go s.lookUpSenders()
	if !opts.SkipMigrate {
		s.backfillInBackground()
	}
	return s, nil
}

// prepare migrates (or, with skipMigrate, checks the migrations are
// applied), configures the fold, loads the known schemas and opens the
// listener's connection.
func (s *Store) prepare(ctx context.Context, gated []string, skipMigrate bool) (*pgx.Conn, error) {
	migrate := Migrate
	if skipMigrate {
		migrate = CheckMigrated
	}
	if err := migrate(ctx, s.pool); err != nil {
		return nil, err
	}
	if err := addFoldTypes(ctx, s.pool, gated, TableLockBudget); err != nil {
		return nil, err
	}
	if err := s.schemas.load(ctx, s.pool); err != nil {
		return nil, fmt.Errorf("loading the node schemas: %w", err)
	}
	return s.connectListener(ctx)
}

// Stats counts the store's work since Open.
type Stats struct {
	LiveQueries int   // live queries registered now
	Notices     int64 // change notices received by the listener
	// Requeries counts (notice, live query) pairs in which the notice made
	// the query re-read: its node type could matter to the query, or the
	// notice had none. Re-reads scheduled while one runs share one read.
	Requeries int64
	// NoticeToFrame times each delivery of frames a live query makes
	// because of change notices (the frames of one re-read or patch,
	// mostly one): from the arrival of the earliest of those notices at
	// the listener (the read of its connection that brought it) to just
	// before the first frame is handed to the query's observer. Notices
	// that make no frame, and those folded into a Reset or an Initial,
	// are not timed.
	NoticeToFrame Latency
	// NoticeDispatch times each notice from its arrival at the listener to
	// the end of its handling there (decoding it and waking the live
	// queries it concerns): the listener's share of NoticeToFrame, the
	// wait behind the notices that arrived with it included.
	NoticeDispatch Latency
	// Skipped counts (notice, live query) pairs settled without reading:
	// the query cannot match the node type, or does not look where the
	// written node is (schema, table, anchor).
	Skipped    int64
	Reads      int64 // whole-result read statements: Initials, Resets, re-reads of a limit or many writes
	PointReads int64 // statements re-reading written paths for live queries
	// NoticeRows counts written paths live queries settled with the row
	// their change notice carried, without re-reading them.
	NoticeRows int64
	Resets     int64 // Reset frames sent after listener reconnects
	Reconnects int64 // listener connections made after the first
	// RetriedReads counts reads run a second time because the server closed
	// the first attempt's connection.
	RetriedReads int64
}

// Stats returns the counters so far.
func (s *Store) Stats() Stats {
	if s.usable("Stats", nil, false) != nil {
		return Stats{}
	}
	s.mu.Lock()
	live := s.live.Len()
	s.mu.Unlock()
	return Stats{
		LiveQueries: live,
		Notices:     s.notices.Load(),
		Requeries:   s.requeries.Load(),
		Skipped:     s.skipped.Load(),
		Reads:       s.reads.Load(),
		PointReads:  s.pointReads.Load(),
		NoticeRows:  s.noticeRows.Load(),
		Resets:      s.resets.Load(),
		Reconnects:  s.reconnects.Load(),

		NoticeToFrame:  s.noticeToFrame.snapshot(),
		NoticeDispatch: s.noticeDispatch.snapshot(),

		RetriedReads: s.lostReads.Load(),
	}
}

// FeedState says whether the store's change feed is live.
type FeedState struct {
	Connected  bool
	Reconnects int64         // listener connections made after the first
	Err        error         // why the feed is down; nil while connected
	RetryIn    time.Duration // while down: the wait before the next attempt, on the store's clock
}

// Feed returns the state of the change feed: the current state at once,
// then every change, from the listener's goroutine; it completes on Close.
// While the feed is down, live queries receive nothing; when it is back,
// every live query gets a Reset and every Changes subscriber a gap notice.
func (s *Store) Feed() rx.Observable[FeedState] {
	if err := s.usable("Feed", nil, false); err != nil {
		return rx.Throw[FeedState](err)
	}
	return s.feed
}

// FeedDown is Feed as a value per state: nil while the feed is connected,
// a *FeedDownError saying why while it is not (the form
// registry.ServerOptions.Feed and other readiness checks take).
func (s *Store) FeedDown() rx.Observable[error] {
	if err := s.usable("FeedDown", nil, false); err != nil {
		return rx.Throw[error](err)
	}
	return rx.Map(s.feed, func(f FeedState) error {
		if f.Connected {
			return nil
		}
		return &FeedDownError{Err: f.Err, Reconnects: f.Reconnects, RetryIn: f.RetryIn}
	})
}

// Changes announces every write to the database, from this store and from
// every other process on it, in commit order, as the notify triggers send
// them (see NotifyChannel). It is hot: a subscriber sees the writes
// announced after it subscribed. A write that changes a node's type is
// announced with NodeType "". Writes made while the feed is down are not
// announced (see Feed): when it is back, one notice with an empty Path and
// NodeType, Op WriteUpdate, stands for them (anything may have changed,
// read again), as for a subscriber that fell behind.
//
// Each subscription is delivered from its own queue, never on the
// listener's goroutine, so a slow subscriber delays neither the listener nor
// the live queries. A subscriber that falls behind by more than
// Options.QueueFrames notices receives, in their place, one notice with an
// empty Path and NodeType, Op WriteUpdate: anything may have changed, read
// again. Close completes every subscription.
func (s *Store) Changes() rx.Observable[mesh.ChangeNotice] {
	if err := s.usable("Changes", nil, false); err != nil {
		return rx.Throw[mesh.ChangeNotice](err)
	}
	return s.changes.Observable()
}

// announce queues n for every Changes subscriber and starts the drains it
// makes due; it never waits for a subscriber.
func (s *Store) announce(n mesh.ChangeNotice) { s.changes.Announce(n).Start() }

// endChanges completes every Changes subscription after what is queued.
func (s *Store) endChanges() { s.changes.Close().Start() }

// Close ends every live query (each completes), stops the listener, waits
// for the store's goroutines (at most 30s on Options.Clock) and closes the pool. Afterwards
// reads fail with a *mesh.UnavailableError wrapping ErrClosed, and writes
// with ErrClosed. Closing twice is harmless. Close must not be called from
// an observer of the store's streams.
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
	var live []*liveQuery
	s.live.All(func(lq *liveQuery) { live = append(live, lq) })
	s.mu.Unlock()
	s.cancel()
	for _, lq := range live { // an idle one ends here, a busy one by its runner
		s.end(lq)
	}

	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	wait, cancel := s.clk.WithTimeout(context.Background(), closeBudget)
	defer cancel()
	var err error
	select {
	case <-done:
	case <-wait.Done():
		err = fmt.Errorf("pgstore: close: the store's goroutines did not end within %s", closeBudget)
	}
	// After the live queries' own ends (an error for one without its
	// Initial), so that it cuts only what Options.Providers keep open.
	s.setEnded()
	s.pool.Close()
	s.endChanges()
	s.feed.OnCompleted()
	return err
}

// endedSignal emits once and completes when Close has ended the store's
// own live queries (s.ended): the Until of a query fanned in with
// Options.Providers.
func (s *Store) endedSignal() rx.Observable[struct{}] {
	return rx.Create(func(sub context.Context, o rx.Observer[struct{}]) {
		stop := context.AfterFunc(s.ended, func() {
			o.OnNext(struct{}{})
			o.OnCompleted()
		})
		context.AfterFunc(sub, func() { stop() })
	})
}

// start runs f on a goroutine of the store, unless the store is closed.
func (s *Store) start(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func unavailable(op string, err error) error {
	return &mesh.UnavailableError{Op: op, Err: err}
}

// schemaFor returns the schema that holds path, and whether it is a global
// satellite schema. A first segment starting with _ resolves through the
// router's registry of global satellites; ok is false for an unregistered
// one. A partition name that cannot be a schema is a *PartitionNameError.
func (s *Store) schemaFor(path string) (schema string, global bool, err error) {
	first := mesh.Partition(path)
	if strings.HasPrefix(first, "_") {
		schema, ok := s.router.SchemaFor(path)
		if !ok {
			return "", true, &mesh.UnroutablePathError{Path: path, Segment: first}
		}
		return schema, true, nil
	}
	schema, err = SchemaName(first)
	if err == nil && s.router.GlobalSchema(schema) {
		return "", false, &PartitionNameError{Partition: first,
			Reason: fmt.Sprintf("the schema %q holds a global satellite, which no fan-out may read", schema)}
	}
	return schema, false, err
}

// isUnroutable reports an error of schemaFor that means "nothing can be
// stored there".
func isUnroutable(err error) bool {
	var u *mesh.UnroutablePathError
	var p *PartitionNameError
	return errors.As(err, &u) || errors.As(err, &p)
}

var (
	_ mesh.Store          = (*Store)(nil)
	_ mesh.SecurityReader = (*Store)(nil)
)
