package registry

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// catalogNode is the package node of plugin id, as a store returns it
// (its id the last segment of its path), spelled name.
func catalogNode(t testing.TB, id, name, tier string) mesh.Node {
	content, err := json.Marshal(PackageContent{Tier: tier})
	require.NoError(t, err)
	return mesh.Node{Path: DefaultSource + "/" + id, ID: id, Name: name, NodeType: PackageNodeType, Content: content}
}

// Live frames (additions, updates that rename a node or change its tier,
// removals, case variants of one package, unreadable content) folded one
// after another give the catalog a full answer over the same nodes gives,
// as the layered maps merge and start over.
func TestALiveCatalogFrameAgreesWithAFullAnswerOverTheSameNodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tiers := []string{"free", "pro", "", "bogus tier"}
	// Ids that differ in case are one package; a name that does not match
	// its id is not used (the id is).
	ids := []string{"Pkg%02d", "PKG%02d", "pkg%02d"}
	names := []string{"", "Pkg%02d", "Other%02d"}
	nodes := map[string]mesh.Node{} // what the query would answer now
	var st *catalogState
	st, _ = nextCatalog(nil, mesh.Change{Kind: mesh.Initial})
	for step := range 2000 {
		var frame mesh.Change
		k := rng.IntN(30)
		id := fmt.Sprintf(ids[rng.IntN(len(ids))], k)
		path := DefaultSource + "/" + id
		n, exists := nodes[path]
		switch {
		case exists && rng.IntN(3) == 0:
			delete(nodes, path)
			frame = mesh.Change{Kind: mesh.Removed, Items: []mesh.Node{n}}
		default:
			n = catalogNode(t, id, fmt.Sprintf(names[rng.IntN(len(names))], k), tiers[rng.IntN(len(tiers))])
			if rng.IntN(20) == 0 {
				n.Content = []byte(`"not a package"`)
			}
			nodes[path] = n
			kind := mesh.Added
			if exists {
				kind = mesh.Updated
			}
			frame = mesh.Change{Kind: kind, Items: []mesh.Node{n}}
		}
		st, _ = nextCatalog(st, frame)

		all := make([]mesh.Node, 0, len(nodes))
		for _, n := range nodes {
			all = append(all, n)
		}
		full, _ := nextCatalog(nil, mesh.Change{Kind: mesh.Reset, Items: all})
		require.Equal(t, full.nodes.len(), st.nodes.len(), "step %d", step)
		require.Equal(t, full.packages.len(), st.packages.len(), "step %d", step)
		for i := range 30 {
			name := fmt.Sprintf("pkg%02d", i)
			want, got := full.lookup(name), st.lookup(name)
			require.Equal(t, want.unreadable, got.unreadable, "step %d: %s", step, name)
			require.Equal(t, want.dups, got.dups, "step %d: %s", step, name)
			if !want.unreadable {
				require.Equal(t, want, got, "step %d: %s", step, name)
			}
		}
	}
}

// A live frame at 20,000 packages allocates for its own node, not a copy
// of the catalog. Negative control: a full answer (what every live frame
// cost when each version copied both maps) allocates more than twenty times
// as much per frame.
func TestALiveCatalogFrameCostsItsNodesNotACopyOfEveryPackage(t *testing.T) {
	const packages, changes = 20_000, 200
	all := make([]mesh.Node, packages)
	for i := range all {
		all[i] = catalogNode(t, fmt.Sprintf("Pkg%05d", i), fmt.Sprintf("Pkg%05d", i), "free")
	}
	st, _ := nextCatalog(nil, mesh.Change{Kind: mesh.Initial, Items: all})
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	updates := make([]mesh.Node, changes)
	for i := range updates {
		updates[i] = catalogNode(t, fmt.Sprintf("Pkg%05d", i*97), fmt.Sprintf("Pkg%05d", i*97), "pro")
	}
	live := allocated(func() {
		for _, n := range updates {
			st, _ = nextCatalog(st, mesh.Change{Kind: mesh.Updated, Items: []mesh.Node{n}})
		}
	})
	assert.Equal(t, "pro", st.lookup("pkg00097").tier)
	assert.Equal(t, packages, st.packages.len())
	const fulls = 10
	full := allocated(func() {
		for range fulls {
			st, _ = nextCatalog(st, mesh.Change{Kind: mesh.Reset, Items: all})
		}
	})
	perLive, perFull := live/changes, full/fulls
	t.Logf("at %d packages a live frame allocated %d KiB; a full answer %d KiB", packages, perLive>>10, perFull>>10)
	assert.Less(t, perLive*20, perFull)
}
