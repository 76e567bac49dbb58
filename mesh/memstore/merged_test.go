package memstore_test

import (
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// quietProvider answers an empty result and stays live: its only effect is
// that the store must fan its queries in.
type quietProvider struct{}

func (quietProvider) Name() string { return "quiet" }

func (quietProvider) Query(*mesh.Query) rx.Observable[mesh.Change] {
	return rx.Concat(rx.Return(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{}}), rx.Never[mesh.Change]())
}

// A live query over 20,000 nodes holds no second copy of its result: with
// no providers the store's own sorted, limited answer is passed on, not
// merged through a fan-in that keeps every node in a map. Negative control:
// the same query on a store with a provider (a fan-in) holds several times
// as much while it is live; both answer the same first page.
func TestALiveQueryWithoutProvidersHoldsNoCopyOfItsResult(t *testing.T) {
	held := func(t *testing.T, opts memstore.Options) (int64, []mesh.Node) {
		opts.Clock = rxtest.NewClock()
		s := newStore(t, opts)
		fill(t, s, 20_000)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got := make(chan []mesh.Node, 1)
		sub := s.Query("namespace:acme/* partitions:all sort:path-desc limit:all").Subscribe(rx.NewObserver(
			func(c mesh.Change) {
				if c.Kind == mesh.Initial {
					got <- slices.Clone(c.Items[:5]) // keep the first page, not the answer
				}
			}, func(err error) { t.Errorf("the live query failed: %v", err) }, nil))
		defer sub.Unsubscribe()
		initial := testkit.Receive(t, got, "the live query's Initial")
		runtime.GC()
		runtime.ReadMemStats(&after)
		return int64(after.HeapAlloc) - int64(before.HeapAlloc), initial
	}
	plain, page := held(t, memstore.Options{})
	fanned, fannedPage := held(t, memstore.Options{Providers: []mesh.Provider{quietProvider{}}})
	t.Logf("held by a live query over 20,000 nodes: %d KiB without providers, %d KiB with a fan-in", plain>>10, fanned>>10)
	assert.Equal(t, fannedPage, page, "the same order either way")
	assert.Equal(t, "acme/ns00199/node099", page[0].Path, "sorted as the query says")
	assert.Less(t, plain*4, fanned)
}
