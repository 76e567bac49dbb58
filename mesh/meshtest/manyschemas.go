package meshtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/mesh"
)

// manySchemaPartitions is how many partitions manySchemas' query names
// beside the global satellite: more than a store's index of live queries
// files one by one (64 cells per query).
const manySchemaPartitions = 80

// manySchemas: a query naming many partitions and a global satellite reads
// all of them live, the satellite's writes included. An index that files
// such a query coarsely, as one reading "every partition", must not lose
// the schema no fan-out over partitions reads: an access fold's grants are
// there, and a revocation missed fails open.
func (s *suite) manySchemas(t testing.TB, svc mesh.Store) {
	names := make([]string, 0, manySchemaPartitions+1)
	for i := range manySchemaPartitions {
		names = append(names, fmt.Sprintf("m%02d", i))
	}
	names = append(names, "_Access")
	w := watchQuery(t, s.bound, svc, "namespace:"+strings.Join(names, "|"))
	first := w.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	assert.Contains(t, first.Partitions, globalAccessSchema, "the query reads the global satellite's schema")

	put(t, svc, node("_Access/g1", "AccessAssignment"))
	w.await(t, "Added _Access/g1", kindOn(mesh.Added, "_Access/g1"))
	put(t, svc, withContent(node("_Access/g1", "AccessAssignment"), `{"v":2}`))
	w.await(t, "Updated _Access/g1", kindOn(mesh.Updated, "_Access/g1"))
	del(t, svc, "_Access/g1")
	w.await(t, "Removed _Access/g1", kindOn(mesh.Removed, "_Access/g1"))
	// The partitions are read as well.
	put(t, svc, node("m41/x", "Item"))
	w.await(t, "Added m41/x", kindOn(mesh.Added, "m41/x"))
}
