package registry

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// The catalog's nodes map lives as long as the catalog and, at 100,000
// packages, is half of it: what it keeps per node is what the collector's
// mark scans in every cycle. Control (run when this was written): with
// decode's tiers map removed, the 2,000 packages hold 2,000 tier strings,
// and the test fails at the count of distinct tier strings.
func TestTheCatalogKeepsEachTierOnceAndANodeWithoutItsPathOrDups(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(keptNode{}), uintptr(40), "a kept node is two strings and a flag")
	var items []mesh.Node
	for i := range 2000 {
		id := fmt.Sprintf("Pkg.N%05d", i)
		items = append(items, catalogNode(t, id, id, []string{"Free ", "PRO", "free"}[i%3]))
	}
	st, _ := nextCatalog(nil, mesh.Change{Kind: mesh.Initial, Items: items})
	data := map[*byte]string{}
	for i := range 2000 {
		p := st.lookup(fmt.Sprintf("Pkg.N%05d", i))
		require.False(t, p.unreadable, "package %d", i)
		require.Equal(t, []string{"free", "pro", "free"}[i%3], p.tier, "package %d", i)
		data[unsafe.StringData(p.tier)] = p.tier
		path := DefaultSource + "/" + fmt.Sprintf("Pkg.N%05d", i)
		kept, ok := st.nodes.get(path)
		require.True(t, ok)
		require.Equal(t, p, kept.at(path), "the node says what the package is")
	}
	require.Equal(t, 2, len(data), "one string per distinct tier, not one per package")
}
