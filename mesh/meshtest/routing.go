package meshtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// globalAccessSchema is where the default router puts _Access/...
const globalAccessSchema = "system_access"

// satellites: {owner}/_Access/{id} belongs to its owner and is read from the
// owner's partition by a query pinned to it.
func (s *suite) satellites(t testing.TB, svc mesh.Store) {
	put(t, svc, node("acme/Docs", "Folder"))
	grant := put(t, svc, node("acme/Docs/_Access/g1", "AccessAssignment"))
	assert.Equal(t, "acme/Docs", grant.MainNode, "a satellite's main node is its owner")

	first := initialOf(t, s.bound, svc, "namespace:acme/Docs/_Access")
	assert.Equal(t, []string{"acme/Docs/_Access/g1"}, pathsOf(first.Items))
	assert.Equal(t, []string{"acme"}, first.Partitions, "the satellite is read from its owner's partition")

	got := firstOf(t, s.bound, "get acme/Docs/_Access/g1", svc.Get("acme/Docs/_Access/g1"))
	assert.Equal(t, "AccessAssignment", got.NodeType)

	children := initialOf(t, s.bound, svc, "namespace:acme/Docs")
	assert.Empty(t, pathsOf(children.Items), "a satellite is not a child of its owner: it sits in the owner's _Access container")
}

// globalSatellites: _Access/x routes through the registry to its own schema.
func (s *suite) globalSatellites(t testing.TB, svc mesh.Store) {
	stored := put(t, svc, node("_Access/x", "AccessAssignment"))
	assert.Equal(t, "_Access/x", stored.Path)

	for _, q := range []string{"path:_Access/x", "namespace:_Access"} {
		first := initialOf(t, s.bound, svc, q)
		assert.Equal(t, []string{"_Access/x"}, pathsOf(first.Items), "query %s", q)
		assert.Equal(t, []string{globalAccessSchema}, first.Partitions, "query %s is pinned to the registered schema", q)
	}
	got := firstOf(t, s.bound, "get _Access/x", svc.Get("_Access/x"))
	assert.Equal(t, "AccessAssignment", got.NodeType)
}

// unregisteredGlobal: a _ first segment nobody registered has nowhere to
// live: a query answers empty without reading, a write is refused.
func (s *suite) unregisteredGlobal(t testing.TB, svc mesh.Store) {
	put(t, svc, node("acme/Docs/a", "Article")) // something that a stray read could return

	first := initialOf(t, s.bound, svc, "path:_Foo/x")
	assert.Empty(t, first.Items)
	assert.Empty(t, first.Partitions, "an unroutable query reads no partition")

	_, err := svc.Put(writeContext(t), node("_Foo/x", "Thing"))
	var unroutable *mesh.UnroutablePathError
	require.ErrorAs(t, err, &unroutable, "a write to an unroutable path is refused")
	assert.Equal(t, "_Foo", unroutable.Segment)
	_, err = firstErr(s.bound, svc.Get("_Foo/x"))
	assert.ErrorIs(t, err, rx.ErrEmpty, "the refused write stored nothing")
}

// unanchored: a query that names no partition is refused; partitions:all is
// the explicit declaration that reads them all (and no global satellite
// schema, which is not a partition).
func (s *suite) unanchored(t testing.TB, svc mesh.Store) {
	put(t, svc, node("acme/a", "Article"))
	put(t, svc, node("beta/b", "Article"))
	put(t, svc, node("gamma/c", "Page"))
	put(t, svc, node("_Access/g", "Article"))

	_, err := firstErr(s.bound, svc.Query("nodeType:Article"))
	var refused *mesh.UnanchoredQueryError
	require.ErrorAs(t, err, &refused, "an unanchored query is refused")
	assert.Contains(t, refused.Shape, "nodeType:Article")

	first := initialOf(t, s.bound, svc, "nodeType:Article partitions:all")
	assert.Equal(t, []string{"acme/a", "beta/b"}, pathsOf(first.Items))
	assert.Subset(t, first.Partitions, []string{"acme", "beta", "gamma"}, "partitions:all reads every partition")
	assert.NotContains(t, first.Partitions, globalAccessSchema, "a global satellite schema is not a partition")

	_, err = firstErr(s.bound, svc.Query("namespace:(acme"))
	var parseErr *mesh.ParseError
	assert.ErrorAs(t, err, &parseErr, "a query that does not parse ends with *mesh.ParseError")
}

// relevance: a write whose node type a query does not name cannot change
// its result and sends it nothing (no Updated, no Reset).
func (s *suite) relevance(t testing.TB, svc mesh.Store) {
	put(t, svc, node("acme/Docs/a", "Article"))
	w := watchQuery(t, s.bound, svc, "namespace:acme/Docs nodeType:Article")
	w.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })

	put(t, svc, node("acme/Docs/p", "Page"))
	put(t, svc, withContent(node("acme/Docs/p", "Page"), `{"v":2}`))
	del(t, svc, "acme/Docs/p")
	put(t, svc, node("acme/Docs/marker", "Article")) // frames keep write order: the marker's comes last
	w.await(t, "Added acme/Docs/marker", kindOn(mesh.Added, "acme/Docs/marker"))

	got := w.received(t)
	require.Len(t, got, 2, "only the Initial and the marker's frame; received:\n%s", describeAll(got))
	assert.Equal(t, mesh.Initial, got[0].Kind)
	assert.Equal(t, []string{"acme/Docs/marker"}, pathsOf(got[1].Items))
}

// notices: Changes announces every write with what a listener needs to
// classify it.
func (s *suite) notices(t testing.TB, svc mesh.Store) {
	w := watchStream(t, s.bound, "changes", svc.Changes())
	put(t, svc, node("acme/n", "Widget"))
	put(t, svc, withContent(node("acme/n", "Widget"), `{"v":2}`))
	del(t, svc, "acme/n")

	want := []mesh.ChangeNotice{
		{Path: "acme/n", Op: mesh.WriteInsert, NodeType: "Widget"},
		{Path: "acme/n", Op: mesh.WriteUpdate, NodeType: "Widget"},
		{Path: "acme/n", Op: mesh.WriteDelete, NodeType: "Widget"},
	}
	for _, n := range want {
		w.await(t, n.Op.String()+" "+n.Path, func(got mesh.ChangeNotice) bool { return got == n })
	}
	var ours []mesh.ChangeNotice
	for _, n := range w.received(t) {
		if n.Path == "acme/n" {
			ours = append(ours, n)
		}
	}
	assert.Equal(t, want, ours, "one notice per write, in write order")
	assert.NoError(t, w.rec.Err(), "Changes does not fail")
}

// globalSchemaName: a partition whose schema would be a global satellite's
// (System_Access, by the default router) is refused, so the satellite's
// nodes never sit in a partition and no fan-out over the partitions reads
// them. A store that took the write mixed _Access/... into the partition
// system_access, and partitions:all returned the grant.
func (s *suite) globalSchemaName(t testing.TB, svc mesh.Store) {
	_, err := svc.Put(writeContext(t), node("System_Access/a", "AccessAssignment"))
	assert.Error(t, err, "a partition named after the global satellite schema %s is refused", globalAccessSchema)
	assert.False(t, mesh.IsUnavailable(err), "the name is the caller's error: %v", err)
	_, err = firstErr(s.bound, svc.Get("System_Access/a"))
	assert.ErrorIs(t, err, rx.ErrEmpty, "the refused write stored nothing")

	put(t, svc, node("_Access/g1", "AccessAssignment"))
	put(t, svc, node("acme/_Access/g2", "AccessAssignment"))
	first := initialOf(t, s.bound, svc, "nodeType:AccessAssignment partitions:all")
	assert.Equal(t, []string{"acme/_Access/g2"}, pathsOf(first.Items), "a fan-out over the partitions reads no global satellite")
	assert.NotContains(t, first.Partitions, globalAccessSchema)
	// Control: the global satellite is there, pinned.
	pinned := initialOf(t, s.bound, svc, "path:_Access/g1")
	assert.Equal(t, []string{"_Access/g1"}, pathsOf(pinned.Items))
}
