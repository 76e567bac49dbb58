package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx"
)

// Before: Subscribe(nil) registered the live query, then failed on a nil
// dereference delivering its Initial, and the query stayed registered
// (Stats().LiveQueries was 1) for the life of the store.
func TestSubscribingANilObserverPanicsNamingItAndLeavesNoLiveQuery(t *testing.T) {
	s := newStore(t, memstore.Options{})
	q := s.Query("namespace:acme/Docs nodeType:Article")
	assert.PanicsWithValue(t,
		`mesh: Subscribe(nil) on the query "namespace:acme/Docs nodeType:Article": the observer is nil; pass one, e.g. rx.NewObserver(onFrame, onError, onDone), or read with rx.All`,
		func() { q.Subscribe(nil) })
	assert.Zero(t, s.Stats().LiveQueries, "nothing was registered")
	put(t, s, "acme/Docs/a", "Article", "") // a write finds no broken query to deliver to

	// Negative control: a real observer registers one live query.
	sub := q.Subscribe(rx.NewObserver[mesh.Change](nil, nil, nil))
	require.Equal(t, 1, s.Stats().LiveQueries)
	sub.Unsubscribe()
	assert.Zero(t, s.Stats().LiveQueries)
}

// An observer that panics on its Initial gets its panic back from
// Subscribe, which returns no subscription to end: the store must not keep
// the query. Control: before the fix the query stayed registered, held by a
// delivery that never finished (Stats().LiveQueries was 1, and the next
// write's frame was never delivered, so Settle failed with "1 subscriber
// behind" at its deadline).
func TestAnObserverThatPanicsOnItsInitialLeavesNoLiveQuery(t *testing.T) {
	s := newStore(t, memstore.Options{})
	q := s.Query("namespace:acme/Docs nodeType:Article")
	assert.PanicsWithValue(t, "observer failed", func() {
		q.Subscribe(rx.NewObserver(func(mesh.Change) { panic("observer failed") }, nil, nil))
	})
	assert.Zero(t, s.Stats().LiveQueries, "nothing stays registered")
	put(t, s, "acme/Docs/a", "Article", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // catches a hang only
	defer cancel()
	require.NoError(t, s.Settle(ctx), "no subscriber is left behind")

	// Negative control: the same query with an observer that returns is live.
	sub := q.Subscribe(rx.NewObserver[mesh.Change](nil, nil, nil))
	defer sub.Unsubscribe()
	assert.Equal(t, 1, s.Stats().LiveQueries)
}
