package auth

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// bound is the real-time budget of a blocking wait in these tests: for a
// goroutine (an HTTP request, a mock clock's timer) to get somewhere. A
// healthy run never comes near it; virtual time does the timing. It is a
// ceiling for a hang, as generous as testkit.Bound (a loaded machine can
// pause a goroutine for seconds).
const bound = testkit.Bound

// faultStore is the real embedded store with the reads of chosen paths made
// to stall (never answer) or fail, and every read counted.
type faultStore struct {
	*memstore.Store

	mu       sync.Mutex
	stalls   map[string]bool  // Get paths that never answer; "plan tiers" for the tier listing
	failures map[string]error // Get paths that fail; "plan tiers" for the tier listing
	hold     rx.Observable[struct{}]

	gets    atomic.Int64
	queries atomic.Int64
	// entered receives the path (or "plan tiers") of each stalled or held read
	// as it is subscribed: its bound is armed from then on.
	entered chan string
}

func newFaultStore(t testing.TB, clk clock.Clock) *faultStore {
	t.Helper()
	s, err := memstore.New(memstore.Options{Clock: clk, GatedTypes: SecurityTypes()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return &faultStore{Store: s, stalls: map[string]bool{}, failures: map[string]error{}, entered: make(chan string, 256)}
}

func (s *faultStore) stall(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalls[key] = true
}

func (s *faultStore) heal(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.stalls, key)
	delete(s.failures, key)
}

func (s *faultStore) fail(key string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[key] = err
}

// holdTiers makes the tier listing wait, once subscribed, until release
// emits.
func (s *faultStore) holdTiers(release rx.Observable[struct{}]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = release
}

func (s *faultStore) fault(key string) (stalled bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalls[key], s.failures[key]
}

func (s *faultStore) stalled(key string) rx.Observable[mesh.Node] {
	return rx.Defer(func() rx.Observable[mesh.Node] {
		s.entered <- key
		return rx.Never[mesh.Node]()
	})
}

func (s *faultStore) Get(path string) rx.Observable[mesh.Node] {
	s.gets.Add(1)
	switch stalled, err := s.fault(path); {
	case stalled:
		return s.stalled(path)
	case err != nil:
		return rx.Throw[mesh.Node](err)
	}
	return s.Store.Get(path)
}

func (s *faultStore) Query(q string) rx.Observable[mesh.Change] {
	s.queries.Add(1)
	if !strings.Contains(q, "namespace:"+TierNamespace) {
		return s.Store.Query(q)
	}
	stalled, err := s.fault(StagePlanTiers)
	s.mu.Lock()
	hold := s.hold
	s.mu.Unlock()
	switch {
	case stalled:
		return rx.Defer(func() rx.Observable[mesh.Change] {
			s.entered <- StagePlanTiers
			return rx.Never[mesh.Change]()
		})
	case err != nil:
		return rx.Throw[mesh.Change](err)
	case hold != nil:
		return rx.Defer(func() rx.Observable[mesh.Change] {
			s.entered <- StagePlanTiers
			return rx.SelectMany(rx.Take(hold, 1), func(struct{}) rx.Observable[mesh.Change] { return s.Store.Query(q) })
		})
	}
	return s.Store.Query(q)
}

func (s *faultStore) reads() int64 { return s.gets.Load() + s.queries.Load() }

// waitEntered waits (in real time, bounded) for the stalled read of key to be
// subscribed.
func (s *faultStore) waitEntered(t testing.TB, key string) {
	t.Helper()
	select {
	case got := <-s.entered:
		require.Equal(t, key, got, "the read that stalled")
	case <-time.After(bound):
		require.FailNow(t, "the stalled read was never subscribed", "waiting for %q", key)
	}
}

// fixture is a registry with one instance, "acme", on plan "pro", holding a
// key and the grant Plugins/*@pro, and a three-rung ladder.
type fixture struct {
	clk   *rxtest.Clock
	store *faultStore
	reg   *Instances
	key   string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	clk := rxtest.NewClock()
	store := newFaultStore(t, clk)
	reg := &Instances{Mesh: store, Clock: clk}
	ctx := context.Background()
	// The ladder first: Register refuses a plan it does not have.
	for _, tier := range []PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 2}, {ID: "enterprise", Rank: 3, AllAccess: true}} {
		require.NoError(t, reg.SetPlanTier(ctx, tier))
	}
	_, err := reg.Register(ctx, "acme", "Acme Corp", "pro")
	require.NoError(t, err)
	key, err := reg.IssueKey(ctx, "acme")
	require.NoError(t, err)
	_, err = reg.SetGrant(ctx, "acme", "ops@example.com", "Plugins/*@pro")
	require.NoError(t, err)
	store.gets.Store(0)
	store.queries.Store(0)
	return &fixture{clk: clk, store: store, reg: reg, key: key}
}

// authenticator returns an Authenticator on the fixture's store and clock,
// with its own ladder.
func (f *fixture) authenticator(logger *slog.Logger) *Authenticator {
	return &Authenticator{
		Mesh:   f.store,
		Clock:  f.clk,
		Ladder: &PlanTierLadder{Mesh: f.store, Clock: f.clk, Logger: logger},
		Logger: logger,
	}
}

func first[T any](t testing.TB, src rx.Observable[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	v, err := rx.First(ctx, src)
	require.NoError(t, err)
	return v
}
