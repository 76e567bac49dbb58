package memstore_test

import (
	"testing"

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
