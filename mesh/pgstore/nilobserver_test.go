package pgstore

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// Before: as on the embedded store, Subscribe(nil) left a live query
// registered (Stats().LiveQueries 1) after a nil dereference.
func TestSubscribingANilObserverToALiveQueryRegistersNothing(t *testing.T) {
	t.Parallel()
	s := openStore(t, pg.Database(t), Options{})
	q := s.Query("namespace:acme nodeType:Item")
	assert.PanicsWithValue(t,
		`mesh: Subscribe(nil) on the query "namespace:acme nodeType:Item": the observer is nil; pass one, e.g. rx.NewObserver(onFrame, onError, onDone), or read with rx.All`,
		func() { q.Subscribe(nil) })
	assert.Zero(t, s.Stats().LiveQueries)

	// Negative control: a real observer registers one, at Subscribe.
	sub := q.Subscribe(rx.NewObserver[mesh.Change](nil, nil, nil))
	assert.Equal(t, 1, s.Stats().LiveQueries)
	sub.Unsubscribe()
}
