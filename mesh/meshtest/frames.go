package meshtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// initialIsTheFullSet: a children query's Initial holds exactly the nodes
// directly in the namespace, read from its one partition.
func (s *suite) initialIsTheFullSet(t testing.TB, svc mesh.Store) {
	for _, n := range []mesh.Node{
		node("acme/Docs/a", "Article"), node("acme/Docs/b", "Article"), node("acme/Docs/c", "Page"),
		node("acme/Docs/sub/d", "Article"), // a grandchild: not a child
		node("acme/Other/e", "Article"),    // another namespace
		node("beta/Docs/f", "Article"),     // another partition
	} {
		put(t, svc, n)
	}
	first := initialOf(t, s.bound, svc, "namespace:acme/Docs")
	assert.ElementsMatch(t, []string{"acme/Docs/a", "acme/Docs/b", "acme/Docs/c"}, pathsOf(first.Items),
		"the Initial holds every child of acme/Docs and nothing else")
	assert.Equal(t, []string{"acme"}, first.Partitions, "a pinned query reads its one partition")

	typed := initialOf(t, s.bound, svc, "namespace:acme/Docs nodeType:Article")
	assert.ElementsMatch(t, []string{"acme/Docs/a", "acme/Docs/b"}, pathsOf(typed.Items))

	below := initialOf(t, s.bound, svc, "path:acme scope:descendants nodeType:Article")
	assert.ElementsMatch(t, []string{"acme/Docs/a", "acme/Docs/b", "acme/Docs/sub/d", "acme/Other/e"}, pathsOf(below.Items))
}

// liveFrames: after the Initial, each write that touches the result arrives
// as one frame of the right kind, in write order.
func (s *suite) liveFrames(t testing.TB, svc mesh.Store) {
	put(t, svc, node("acme/Docs/a", "Article"))
	put(t, svc, node("acme/Docs/b", "Article"))
	w := watchQuery(t, s.bound, svc, "namespace:acme/Docs nodeType:Article")
	initial := w.await(t, "the Initial", func(c mesh.Change) bool { return true })
	require.Equal(t, mesh.Initial, initial.Kind, "the first frame is the Initial")
	assert.ElementsMatch(t, []string{"acme/Docs/a", "acme/Docs/b"}, pathsOf(initial.Items))

	put(t, svc, node("acme/Docs/c", "Article"))
	added := w.await(t, "Added acme/Docs/c", kindOn(mesh.Added, "acme/Docs/c"))
	assert.Equal(t, "Article", added.Items[0].NodeType)

	changed := put(t, svc, withContent(node("acme/Docs/a", "Article"), `{"title":"new"}`))
	updated := w.await(t, "Updated acme/Docs/a", kindOn(mesh.Updated, "acme/Docs/a"))
	assert.Equal(t, changed.Version, updated.Items[0].Version, "the Updated frame carries the stored node")
	assert.JSONEq(t, `{"title":"new"}`, string(updated.Items[0].Content))

	del(t, svc, "acme/Docs/b")
	w.await(t, "Removed acme/Docs/b", kindOn(mesh.Removed, "acme/Docs/b"))

	put(t, svc, node("acme/Docs/c", "Page")) // no longer an Article: it leaves the result
	w.await(t, "Removed acme/Docs/c after its type changed", kindOn(mesh.Removed, "acme/Docs/c"))

	require.NoError(t, svc.Delete(writeContext(t), "acme/Docs/never-there"), "deleting an absent node is not an error")

	var kinds []mesh.ChangeKind
	for _, c := range w.received(t) {
		kinds = append(kinds, c.Kind)
	}
	assert.Equal(t, []mesh.ChangeKind{mesh.Initial, mesh.Added, mesh.Updated, mesh.Removed, mesh.Removed}, kinds,
		"one frame per write that touched the result, in write order")
}

// sortFixture writes nodes whose names order differently from their paths,
// with a tie on name that the path must break.
func sortFixture(t testing.TB, svc mesh.Store) {
	put(t, svc, named(node("acme/L/p1", "Item"), "m"))
	put(t, svc, named(node("acme/L/p2", "Item"), "z"))
	put(t, svc, named(node("acme/L/p3", "Item"), "a"))
	put(t, svc, named(node("acme/L/p4", "Item"), "m"))
}

func (s *suite) ordering(t testing.TB, svc mesh.Store) {
	sortFixture(t, svc)
	asc := initialOf(t, s.bound, svc, "namespace:acme/L sort:name-asc")
	assert.Equal(t, []string{"acme/L/p3", "acme/L/p1", "acme/L/p4", "acme/L/p2"}, pathsOf(asc.Items),
		"by name a < m = m < z, the tie on m broken by path")
	desc := initialOf(t, s.bound, svc, "namespace:acme/L sort:name-desc")
	assert.Equal(t, []string{"acme/L/p2", "acme/L/p1", "acme/L/p4", "acme/L/p3"}, pathsOf(desc.Items),
		"descending by name; a tie still goes by path ascending")
	byPath := initialOf(t, s.bound, svc, "namespace:acme/L")
	assert.Equal(t, []string{"acme/L/p1", "acme/L/p2", "acme/L/p3", "acme/L/p4"}, pathsOf(byPath.Items),
		"with no sort, the order is by path")
}

func (s *suite) limit(t testing.TB, svc mesh.Store) {
	sortFixture(t, svc)
	first := initialOf(t, s.bound, svc, "namespace:acme/L sort:name-asc limit:2")
	assert.Equal(t, []string{"acme/L/p3", "acme/L/p1"}, pathsOf(first.Items), "the first two in query order")
	all := initialOf(t, s.bound, svc, "namespace:acme/L limit:all")
	assert.Len(t, all.Items, 4)
}
