package meshtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// projection: a query with select: gets, in its Initial and its live
// frames, nodes holding only the selected fields and their paths (a
// content property inside a content object of the selected properties
// only), sorted by what it did not select; a query without select: beside
// it still gets whole nodes.
func (s *suite) projection(t testing.TB, svc mesh.Store) {
	put(t, svc, named(withContent(node("acme/S/a", "Article"), `{"title":"T1","body":"long","meta":{"Owner":"o1","size":3}}`), "zeta"))
	put(t, svc, named(withContent(node("acme/S/b", "Article"), `{"body":"no title"}`), "alpha"))
	const q = "namespace:acme/S sort:name-asc select:name,content.title,content.meta.owner"
	w := watchQuery(t, s.bound, svc, q)
	whole := watchQuery(t, s.bound, svc, "namespace:acme/S sort:name-asc")

	initial := w.await(t, "the Initial", func(mesh.Change) bool { return true })
	// Its Initial before the write, or the write may be in it, not Added.
	whole.await(t, "the whole Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	require.Equal(t, mesh.Initial, initial.Kind)
	require.Equal(t, []string{"acme/S/b", "acme/S/a"}, pathsOf(initial.Items), "sorted by name, which is selected")
	b, a := initial.Items[0], initial.Items[1]
	assert.Equal(t, mesh.Node{Path: "acme/S/b", Name: "alpha"}, b, "no selected property: no content")
	assert.Equal(t, "zeta", a.Name)
	assert.JSONEq(t, `{"title":"T1","meta":{"Owner":"o1"}}`, string(a.Content))
	assert.Empty(t, a.NodeType, "not selected")
	assert.Zero(t, a.Version, "not selected")

	put(t, svc, named(withContent(node("acme/S/c", "Page"), `{"title":"T3","body":"x"}`), "mid"))
	added := w.await(t, "Added acme/S/c", kindOn(mesh.Added, "acme/S/c"))
	assert.Equal(t, "mid", added.Items[0].Name)
	assert.JSONEq(t, `{"title":"T3"}`, string(added.Items[0].Content))
	assert.Empty(t, added.Items[0].NodeType)

	full := whole.await(t, "Added acme/S/c, whole", kindOn(mesh.Added, "acme/S/c"))
	assert.Equal(t, "Page", full.Items[0].NodeType, "a query without select: gets the whole node")
	assert.JSONEq(t, `{"title":"T3","body":"x"}`, string(full.Items[0].Content))
}
