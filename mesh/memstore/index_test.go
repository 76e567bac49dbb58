package memstore_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// fill writes n nodes into partition acme, 100 per namespace
// acme/ns00000/..., plus 50 Hot nodes in acme/hot and 10 in acme/hot/sub.
func fill(tb testing.TB, s *memstore.Store, n int) {
	tb.Helper()
	ctx := context.Background()
	for i := range n {
		_, err := s.Put(ctx, mesh.Node{Path: fmt.Sprintf("acme/ns%05d/node%03d", i/100, i%100), NodeType: "Item"})
		require.NoError(tb, err)
	}
	for i := range 50 {
		_, err := s.Put(ctx, mesh.Node{Path: fmt.Sprintf("acme/hot/n%02d", i), NodeType: "Hot", Content: []byte(`{"rank":1}`)})
		require.NoError(tb, err)
	}
	for i := range 10 {
		_, err := s.Put(ctx, mesh.Node{Path: fmt.Sprintf("acme/hot/sub/s%02d", i), NodeType: "Hot"})
		require.NoError(tb, err)
	}
}

// scannedBy returns the rows of q's Initial and how many nodes it examined.
func scannedBy(t *testing.T, s *memstore.Store, q string) ([]mesh.Node, int64) {
	t.Helper()
	before := s.Stats().Scanned
	c := first(t, s.Query(q))
	return c.Items, s.Stats().Scanned - before
}

func TestAnAnchoredQueryExaminesOnlyTheNodesAroundItsAnchor(t *testing.T) {
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	fill(t, s, 10_000)

	for _, c := range []struct {
		query   string
		rows    int
		scanned int64
	}{
		{"namespace:acme/hot", 50, 50},
		{"path:acme/hot scope:descendants", 60, 60},
		{"path:acme/hot/n07", 1, 1},
		{"path:acme/hot/sub/s01 scope:hierarchy", 1, 1}, // the ancestors acme and acme/hot are not nodes
		{"[acme/hot/n01, acme/hot/n02, acme/hot/n01]", 2, 2},
		{"namespace:acme/ns00042 nodeType:Item", 100, 100},
	} {
		rows, scanned := scannedBy(t, s, c.query)
		assert.Len(t, rows, c.rows, c.query)
		assert.Equal(t, c.scanned, scanned, "%s examines only what its anchor selects", c.query)
	}

	// Negative control: the same 60 Hot nodes selected by a filter instead
	// of an anchor examine the whole partition.
	rows, scanned := scannedBy(t, s, "path:acme scope:descendants nodeType:Hot")
	assert.Len(t, rows, 60)
	assert.EqualValues(t, 10_000+60, scanned)
}

// The index answers exactly what matching every node would: each query is
// checked against a full walk filtered by mesh.Query.Matches.
func TestTheIndexSelectsWhatMatchingEveryNodeSelects(t *testing.T) {
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	fill(t, s, 1_000)
	put(t, s, "acme", "Partition", "")
	put(t, s, "acme/hot", "Folder", "")
	put(t, s, "acme/hot/_Access/g", "AccessAssignment", "")
	all := first(t, s.Query("path:acme scope:subtree")).Items
	require.Len(t, all, 1_000+60+3)

	for _, q := range anchorShapes() {
		parsed, err := mesh.Parse(q)
		require.NoError(t, err, q)
		var want []string
		for _, n := range all {
			if parsed.Matches(n) {
				want = append(want, n.Path)
			}
		}
		got := first(t, s.Query(q))
		assert.ElementsMatch(t, want, paths(got.Items), q)
	}
}

// Live queries of every anchor shape, subscribed before the writes, end with
// what a fresh read returns: the index and the write classification agree
// with matching.
func TestLiveResultsOfEveryAnchorShapeEqualAFreshRead(t *testing.T) {
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	live := map[string]*rxtest.Recorder[mesh.Change]{}
	for _, q := range anchorShapes() {
		rec := rxtest.Record(nil, s.Query(q))
		t.Cleanup(rec.Unsubscribe)
		live[q] = rec
	}
	fill(t, s, 500)
	put(t, s, "acme", "Partition", "")
	put(t, s, "acme/hot", "Folder", "")
	put(t, s, "ACME/HOT/n01", "Hot", "")
	put(t, s, "acme/hot/_Access/g", "AccessAssignment", "")
	require.NoError(t, s.Delete(context.Background(), "acme/hot/n02"))
	put(t, s, "acme/hot/n03", "Cold", "")
	settle(t, s)

	for q, rec := range live {
		rows := map[string]int64{}
		for _, c := range rec.Values() {
			if c.Kind == mesh.Reset {
				clear(rows)
			}
			for _, n := range c.Items {
				if c.Kind == mesh.Removed {
					delete(rows, n.Path)
				} else {
					rows[n.Path] = n.Version
				}
			}
		}
		want := map[string]int64{}
		for _, n := range first(t, s.Query(q)).Items {
			want[n.Path] = n.Version
		}
		assert.Equal(t, want, rows, q)
		assert.NoError(t, rec.GrammarErr())
	}
}

func anchorShapes() []string {
	return []string{
		"namespace:acme/hot", "namespace:ACME/Hot", "path:acme/hot scope:descendants", "path:acme/hot scope:subtree",
		"path:acme/hot/sub/s01 scope:ancestors", "path:acme/hot/sub/s01 scope:hierarchy", "path:acme/hot/sub",
		"path:acme/hot/n* scope:exact", "path:acme/h*t scope:children", "[acme/hot/n01, acme/ns00001/node001]",
		"namespace:acme/hot/_Access", "namespace:acme/hot|acme/ns00003", "path:acme/nowhere scope:subtree",
		"path:acme/hot nodeType:Hot scope:subtree", "[acme/hot/n01, acme/hot/n03] nodeType:Hot",
	}
}

// A million nodes fit, and pinned reads stay indexed at that size.
func TestAMillionNodesFitAndPinnedReadsStayIndexed(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a million nodes")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	fill(t, s, 1_000_000)
	runtime.GC()
	runtime.ReadMemStats(&after)
	perNode := float64(after.HeapAlloc-before.HeapAlloc) / 1_000_060
	t.Logf("heap per node: %.0f bytes", perNode)
	// A node here has a ~25-byte path. The Node value alone is 160 bytes; the
	// bound leaves room for its entry and the namespace index, but not for a
	// second copy of each node (say, a by-path map beside the tree).
	assert.Less(t, perNode, 400.0, "memory per node")

	rows, scanned := scannedBy(t, s, "namespace:acme/hot")
	assert.Len(t, rows, 50)
	assert.EqualValues(t, 50, scanned, "a pinned read at a million nodes still examines only its namespace")
	runtime.KeepAlive(s)
}
