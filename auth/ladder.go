package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/internal/flight"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// Defaults for PlanTierLadder fields left zero.
const (
	DefaultLadderReadTimeout   = 10 * time.Second
	DefaultLadderCacheDuration = time.Minute
)

// StagePlanTiers names the wait for the plan-tier listing.
const StagePlanTiers = "plan tiers"

// tierQuery lists the ladder: one Initial frame is the whole ladder.
const tierQuery = "namespace:" + TierNamespace + " nodeType:" + TierNodeType

// PlanTierLadder reads the plan ladder (the PlanTier nodes under
// [TierNamespace]) and caches it. Use one per mesh and share it: the cache is
// the value's own.
//
// A read within CacheDuration of the last fill answers from the cache without
// touching the mesh. Otherwise one fill runs, however many callers ask at
// once, in an internal/flight slot: the fill runs on the ladder's own
// subscription (so a caller that gives up does not cancel it), and the slot
// is released only if it still holds that fill. A fill is bounded by
// ReadTimeout, and a store or Logger that panics during it fails it with a
// *PanicError; when it fails, readers get the last snapshot, or the empty
// ladder if there never was one (unknown plans license nothing), and a
// warning is logged.
//
// A PlanTierLadder must not be copied after first use.
type PlanTierLadder struct {
	Mesh mesh.Store
	// Clock bounds fills and ages the cache; nil means the real clock.
	Clock clock.Clock
	// ReadTimeout bounds one fill; zero means DefaultLadderReadTimeout.
	ReadTimeout time.Duration
	// CacheDuration is how long a filled ladder is served; zero means
	// DefaultLadderCacheDuration.
	CacheDuration time.Duration
	// Logger receives a warning per failed fill; nil means slog.Default().
	Logger *slog.Logger

	mu       sync.Mutex
	snap     PlanTierRanks
	has      bool
	filledAt time.Time

	inflight flight.Slot[ladderOutcome, time.Time] // Meta: when the fill started
}

// ladderFill is one fill in flight.
type ladderFill = flight.Flight[ladderOutcome, time.Time]

// ladderOutcome is what a read yields: the ranks to decide with and, when
// the fill failed, why and whether the ranks are a last snapshot.
type ladderOutcome struct {
	ranks PlanTierRanks
	err   error
	stale bool // err != nil and ranks is the last good snapshot
}

// Read returns the ladder: one value, then completion. It never fails.
func (l *PlanTierLadder) Read() rx.Observable[PlanTierRanks] {
	return rx.Map(l.read(), func(o ladderOutcome) PlanTierRanks { return o.ranks })
}

// now returns the ladder when a read would answer it from the cache at
// once (filled within CacheDuration), and false when a read would fill it.
func (l *PlanTierLadder) now() (PlanTierRanks, bool) {
	clk := l.clock()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snap, l.has && clk.Since(l.filledAt) < l.cacheDuration()
}

// read is Read with the failure kept, for callers that must tell "the ladder
// is empty" from "the ladder could not be read".
func (l *PlanTierLadder) read() rx.Observable[ladderOutcome] {
	return rx.Defer(func() rx.Observable[ladderOutcome] {
		snap, fresh := l.now()
		if fresh {
			return rx.Return(ladderOutcome{ranks: snap})
		}
		clk := l.clock()
		f, _, owner := l.inflight.Claim(clk.Now, nil)
		if owner {
			l.start(f, clk)
		}
		return f.Result()
	})
}

// start runs f on the ladder's own subscription: no caller can cancel it,
// and the timeout ends it, so it needs no owner to stop it.
func (l *PlanTierLadder) start(f *ladderFill, clk clock.Clock) {
	if l.Mesh == nil {
		l.finish(f, PlanTierRanks{}, &ConfigError{Setting: "PlanTierLadder.Mesh", Problem: "is nil (set it to the store holding the plan tiers)"})
		return
	}
	var finished atomic.Bool
	once := func(ranks PlanTierRanks, err error) {
		if finished.CompareAndSwap(false, true) {
			l.finish(f, ranks, err)
		}
	}
	// The store's Query and its subscription are the caller's code, run
	// for every reader of this fill: a panic there fails the fill, so the
	// slot is released and its readers answered, instead of leaving it
	// claimed forever. A panic after the fill finished (a reader's own
	// observer, answered from here) is not the fill's and goes on up.
	defer func() {
		if finished.Load() {
			return
		}
		if p := recovered("listing the plan tiers", recover()); p != nil {
			once(PlanTierRanks{}, p)
		}
	}()
	initial := rx.Take(rx.Filter(l.Mesh.Query(tierQuery), func(c mesh.Change) bool { return c.Kind == mesh.Initial }), 1)
	var got *mesh.Change
	rx.TimeoutStage(initial, StagePlanTiers, l.readTimeout(), clk).Subscribe(rx.NewObserver(
		func(c mesh.Change) { got = &c },
		func(err error) { once(PlanTierRanks{}, err) },
		func() {
			switch {
			case got == nil:
				once(PlanTierRanks{}, errors.New("the tier listing completed without its Initial frame"))
			case len(got.SilentProviders) > 0:
				// A floor, not the ladder: a missing tier would read as unknown.
				once(PlanTierRanks{}, fmt.Errorf("provider(s) %s sent no tiers", strings.Join(got.SilentProviders, ", ")))
			default:
				// ranksOf logs through the caller's Logger, maybe on the
				// store's goroutine: its panic fails the fill too.
				var ranks PlanTierRanks
				if p := guard("reading the plan tiers", func() { ranks = l.ranksOf(got.Items) }); p != nil {
					once(PlanTierRanks{}, p)
					return
				}
				once(ranks, nil)
			}
		},
	))
}

// ranksOf builds the ladder from tier nodes. A tier whose content cannot be
// read is left out, so its plan is unknown and licenses nothing.
func (l *PlanTierLadder) ranksOf(nodes []mesh.Node) PlanTierRanks {
	rows := make([]PlanTier, 0, len(nodes))
	for _, n := range nodes {
		t, err := ParsePlanTier(n.ID, n.Content)
		if err != nil {
			l.logger().Warn("auth: plan tier left out of the ladder", "path", n.Path, "error", err)
			continue
		}
		rows = append(rows, t)
	}
	ranks := NewPlanTierRanks(rows)
	warned := map[string]bool{}
	for _, t := range rows {
		if _, ok := ranks.RankOf(t.ID); !ok && !warned[t.ID] {
			warned[t.ID] = true
			l.logger().Warn("auth: plan tier left out of the ladder: its tier nodes disagree (rank or allAccess), so the plan licenses nothing until one is removed", "plan", t.ID)
		}
	}
	return ranks
}

// finish publishes a fill: a success becomes the cache, a failure falls back
// to the last snapshot. The cache is updated and the slot released before the
// readers are told, so a reader that arrives next sees the new cache.
func (l *PlanTierLadder) finish(f *ladderFill, ranks PlanTierRanks, err error) {
	out := ladderOutcome{ranks: ranks}
	l.mu.Lock()
	if err == nil {
		l.snap, l.has, l.filledAt = ranks, true, f.Meta
	} else {
		out = ladderOutcome{ranks: l.snap, err: err, stale: l.has}
	}
	l.mu.Unlock()
	l.inflight.Release(f)
	// Deferred: a Logger that panics still leaves the readers answered.
	defer f.Resolve(out)
	if err != nil {
		if out.stale {
			l.logger().Warn("auth: could not read the plan-tier ladder; serving the last snapshot", "stage", StagePlanTiers, "error", err)
		} else {
			l.logger().Warn("auth: could not read the plan-tier ladder and have no snapshot; plan-scoped entries license nothing", "stage", StagePlanTiers, "error", err)
		}
	}
}

func (l *PlanTierLadder) clock() clock.Clock {
	if l.Clock == nil {
		return clock.New()
	}
	return l.Clock
}

func (l *PlanTierLadder) readTimeout() time.Duration {
	if l.ReadTimeout <= 0 {
		return DefaultLadderReadTimeout
	}
	return l.ReadTimeout
}

func (l *PlanTierLadder) cacheDuration() time.Duration {
	if l.CacheDuration <= 0 {
		return DefaultLadderCacheDuration
	}
	return l.CacheDuration
}

func (l *PlanTierLadder) logger() *slog.Logger {
	return orDefault(l.Logger)
}

// orDefault returns lg, or slog.Default() when lg is nil: the package's
// logger convention.
func orDefault(lg *slog.Logger) *slog.Logger {
	if lg == nil {
		return slog.Default()
	}
	return lg
}
