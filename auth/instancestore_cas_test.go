package auth

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/rx"
)

// rendezvous makes the first rounds*writers reads of one path meet in
// rounds of writers: each read takes its value, then waits until every
// writer's read of the round has too. Writers that read the same version
// before any of them writes is the interleaving that loses an update
// without a compare-and-set; later reads pass straight through.
type rendezvous struct {
	path    string
	writers int

	mu      sync.Mutex
	left    int           // reads still to be held
	arrived int           // reads of the current round so far
	round   chan struct{} // closed when the current round is complete
}

func newRendezvous(path string, writers, rounds int) *rendezvous {
	return &rendezvous{path: path, writers: writers, left: writers * rounds, round: make(chan struct{})}
}

// meet waits (bounded in real time) for the current round to fill.
func (r *rendezvous) meet() {
	r.mu.Lock()
	if r.left == 0 {
		r.mu.Unlock()
		return
	}
	r.left--
	r.arrived++
	round := r.round
	if r.arrived == r.writers {
		close(round)
		r.arrived, r.round = 0, make(chan struct{})
	}
	r.mu.Unlock()
	select {
	case <-round:
	case <-time.After(bound):
	}
}

// meeting is a mesh whose reads of the rendezvous path meet there.
type meeting struct {
	mesh.Store
	at *rendezvous
}

func (m meeting) Get(path string) rx.Observable[mesh.Node] {
	if path != m.at.path {
		return m.Store.Get(path)
	}
	return rx.Defer(func() rx.Observable[mesh.Node] {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		n, err := rx.First(ctx, m.Store.Get(path))
		m.at.meet()
		switch {
		case errors.Is(err, rx.ErrEmpty):
			return rx.Empty[mesh.Node]()
		case err != nil:
			return rx.Throw[mesh.Node](err)
		}
		return rx.Return(n)
	})
}

// lastWriterWins is a mesh whose conditional write is a plain Put: what a
// process-local lock gives two processes.
type lastWriterWins struct{ mesh.Store }

func (l lastWriterWins) PutIfVersion(ctx context.Context, n mesh.Node, _ int64) (mesh.Node, error) {
	return l.Put(ctx, n)
}

// issueTogether registers "acme" through regs[0], then has every registry
// issue one key for it at the same time, and returns the keys issued.
func issueTogether(t *testing.T, regs ...*Instances) []string {
	t.Helper()
	ctx := context.Background()
	err := registerAcme(ctx, regs[0])
	require.NoError(t, err)
	keys := make([]string, len(regs))
	var wg sync.WaitGroup
	for i, r := range regs {
		wg.Go(func() {
			key, err := r.IssueKey(ctx, "acme")
			assert.NoError(t, err)
			keys[i] = key
		})
	}
	wg.Wait()
	return keys
}

// lostKeys returns the issued keys the instance does not hold.
func lostKeys(t *testing.T, r *Instances, keys []string) []string {
	t.Helper()
	inst, err := r.Instance(context.Background(), "acme")
	require.NoError(t, err)
	var lost []string
	for _, k := range keys {
		if !inst.HasKeyHash(HashKey(k)) {
			lost = append(lost, HashPrefix(HashKey(k)))
		}
	}
	return lost
}

func TestTwoRegistriesIssuingKeysAtOnceLoseNone(t *testing.T) {
	run := func(t *testing.T, wrap func(mesh.Store) mesh.Store) []string {
		s, err := memstore.New(memstore.Options{GatedTypes: SecurityTypes()})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		// Two reads each: the existence check, then the read the update
		// starts from. Both writers read version 1 before either writes.
		at := newRendezvous(InstancePath("acme"), 2, 2)
		a := &Instances{Mesh: wrap(meeting{s, at})}
		b := &Instances{Mesh: wrap(meeting{s, at})}
		return lostKeys(t, a, issueTogether(t, a, b))
	}
	assert.Empty(t, run(t, func(s mesh.Store) mesh.Store { return s }), "keys lost")

	t.Run("without the compare-and-set a key is lost", func(t *testing.T) {
		lost := run(t, func(s mesh.Store) mesh.Store { return lastWriterWins{s} })
		assert.Len(t, lost, 1, "the same interleaving loses one key when the write is unconditional")
	})
}

// openReplicas opens n pgstore stores on one fresh database: replicas.
func openReplicas(t *testing.T, n int) []*pgstore.Store {
	t.Helper()
	url := pg.Database(t)
	stores := make([]*pgstore.Store, n)
	for i := range stores {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := pgstore.Open(ctx, url, pgstore.Options{GatedTypes: SecurityTypes()})
		cancel()
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	return stores
}

func TestTwoPostgresReplicasIssuingKeysAtOnceLoseNone(t *testing.T) {
	run := func(t *testing.T, wrap func(mesh.Store) mesh.Store) []string {
		stores := openReplicas(t, 2)
		at := newRendezvous(InstancePath("acme"), 2, 2)
		a := &Instances{Mesh: wrap(meeting{stores[0], at})}
		b := &Instances{Mesh: wrap(meeting{stores[1], at})}
		return lostKeys(t, a, issueTogether(t, a, b))
	}
	assert.Empty(t, run(t, func(s mesh.Store) mesh.Store { return s }), "keys lost")

	t.Run("without the compare-and-set a key is lost", func(t *testing.T) {
		lost := run(t, func(s mesh.Store) mesh.Store { return lastWriterWins{s} })
		assert.Len(t, lost, 1, "the same interleaving loses one key when the write is unconditional")
	})
}

func TestManyConcurrentKeyChangesOnTwoPostgresReplicasKeepEveryIssuedKey(t *testing.T) {
	stores := openReplicas(t, 2)
	regs := []*Instances{{Mesh: stores[0]}, {Mesh: stores[1]}}
	ctx := context.Background()
	err := registerAcme(ctx, regs[0])
	require.NoError(t, err)
	initial, err := regs[0].IssueKey(ctx, "acme")
	require.NoError(t, err)

	const perReplica = 6
	var (
		mu   sync.Mutex
		keys []string
		wg   sync.WaitGroup
	)
	for _, r := range regs {
		for range perReplica {
			wg.Go(func() {
				key, err := r.IssueKey(ctx, "acme")
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				keys = append(keys, key)
				mu.Unlock()
			})
		}
		// Disabling and enabling rewrite the same node meanwhile.
		wg.Go(func() { assert.NoError(t, r.Disable(ctx, "acme")) })
	}
	wg.Wait()
	require.NoError(t, regs[1].Enable(ctx, "acme"))
	require.Len(t, keys, 2*perReplica)
	assert.Empty(t, lostKeys(t, regs[0], append(keys, initial)), "keys lost")

	inst, err := regs[1].Instance(ctx, "acme")
	require.NoError(t, err)
	assert.Len(t, inst.KeyHashes, 2*perReplica+1, "every key issued, and no other")
	for _, k := range keys {
		idx := first(t, stores[1].Get(KeyIndexPath(HashKey(k))))
		c, err := decodeKeyIndex(idx)
		require.NoError(t, err)
		assert.Equal(t, "acme", c.Instance, "the index node of every key leads to the instance")
	}
}

// everWritten is a mesh on which another writer always got there first.
type everWritten struct {
	mesh.Store
	attempts atomic.Int64
}

func (e *everWritten) PutIfVersion(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	e.attempts.Add(1)
	return mesh.Node{}, &mesh.VersionConflictError{Path: n.Path, Expected: expected, Actual: expected + 1}
}

func TestAChangeThatAlwaysLosesTheRaceEndsWithATypedErrorAndWritesNothing(t *testing.T) {
	f := newFixture(t)
	contended := &everWritten{Store: f.store}
	reg := &Instances{Mesh: contended, Clock: f.clk}
	err := reg.Disable(context.Background(), "acme")
	var ce *ContendedError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "acme", ce.ID)
	assert.EqualValues(t, maxUpdateAttempts, contended.attempts.Load(), "bounded: it gives up after its attempts")
	var conflict *mesh.VersionConflictError
	assert.ErrorAs(t, err, &conflict, "the last conflict is kept")

	inst, err := f.reg.Instance(context.Background(), "acme")
	require.NoError(t, err)
	assert.False(t, inst.Disabled, "nothing was written")
	// Control: on the store itself the same change lands.
	require.NoError(t, f.reg.Disable(context.Background(), "acme"))
}

func TestTwoPostgresReplicasRotatingAtOnceLeaveExactlyOneKeyAndNoStrayIndex(t *testing.T) {
	stores := openReplicas(t, 2)
	ctx := context.Background()
	at := newRendezvous(InstancePath("acme"), 2, 2)
	plain := &Instances{Mesh: stores[0]}
	err := registerAcme(ctx, plain)
	require.NoError(t, err)
	old, err := plain.IssueKey(ctx, "acme")
	require.NoError(t, err)
	// Both rotations read the instance at the same version before either
	// writes.
	regs := []*Instances{{Mesh: meeting{stores[0], at}}, {Mesh: meeting{stores[1], at}}}

	keys := make([]string, 2)
	var wg sync.WaitGroup
	for i, r := range regs {
		wg.Go(func() {
			key, err := r.RotateKey(ctx, "acme")
			assert.NoError(t, err)
			keys[i] = key
		})
	}
	wg.Wait()

	inst, err := plain.Instance(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, inst.KeyHashes, 1, "a rotation leaves one key")
	survivor := inst.KeyHashes[0]
	assert.Contains(t, []string{HashKey(keys[0]), HashKey(keys[1])}, survivor, "the key of the rotation that landed last")
	assert.False(t, inst.HasKeyHash(HashKey(old)), "the key before both rotations is revoked")

	index := first(t, stores[1].Query("namespace:"+KeyIndexNamespace)).Items
	require.Len(t, index, 1, "no index node is left for a revoked key: %v", index)
	assert.Equal(t, KeyIndexPath(survivor), index[0].Path)
}

// registerAcme writes the plan "pro" to reg's ladder, then registers the
// instance "acme" on it: Register refuses a plan the ladder does not have.
func registerAcme(ctx context.Context, reg *Instances) error {
	if err := reg.SetPlanTier(ctx, PlanTier{ID: "pro", Rank: 2}); err != nil {
		return err
	}
	_, err := reg.Register(ctx, "acme", "Acme", "pro")
	return err
}
