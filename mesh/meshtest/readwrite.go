package meshtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// getPresentAbsent: Get has three outcomes; here the two a healthy store
// gives, and the typed error of a path that cannot name a node.
func (s *suite) getPresentAbsent(t testing.TB, svc mesh.Store) {
	stored := put(t, svc, withContent(node("acme/Docs/a", "Article"), `{"n":1}`))
	got := firstOf(t, s.bound, "get acme/Docs/a", svc.Get("acme/Docs/a"))
	assert.Equal(t, stored.Path, got.Path)
	assert.Equal(t, stored.Version, got.Version)
	assert.JSONEq(t, `{"n":1}`, string(got.Content))

	_, err := firstErr(s.bound, svc.Get("acme/Docs/missing"))
	assert.ErrorIs(t, err, rx.ErrEmpty, "an absent node is a completion without a value, not an error")

	_, err = firstErr(s.bound, svc.Get("acme//a"))
	var pathErr *mesh.PathError
	assert.ErrorAs(t, err, &pathErr, "an invalid path is a *mesh.PathError")
}

// closedIsUnavailable: a store that cannot find out says so; it never
// answers "absent" for a node it could not look up.
func (s *suite) closedIsUnavailable(t testing.TB, svc mesh.Store) {
	closer, ok := svc.(io.Closer)
	if !ok {
		t.Skip("the store cannot simulate unavailability: it does not implement io.Closer")
	}
	put(t, svc, node("acme/Docs/a", "Article"))
	require.NoError(t, closer.Close())

	_, err := firstErr(s.bound, svc.Get("acme/Docs/a"))
	require.Error(t, err, "a closed store cannot answer a read")
	assert.NotErrorIs(t, err, rx.ErrEmpty, "unavailable is never absent")
	assert.True(t, mesh.IsUnavailable(err), "the error says the store could not find out: %v", err)

	_, err = firstErr(s.bound, svc.Query("namespace:acme/Docs"))
	require.Error(t, err)
	assert.True(t, mesh.IsUnavailable(err), "a query on a closed store is unavailable: %v", err)
}

// versions: the version and LastModified move only when something a reader
// sees changes, and a no-op write announces nothing.
func (s *suite) versions(t testing.TB, svc mesh.Store) {
	w := watchQuery(t, s.bound, svc, "namespace:acme/V")
	w.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })

	first := put(t, svc, withContent(node("acme/V/a", "Article"), `{"a":1,"b":[1,2]}`))
	require.Positive(t, first.Version, "a stored node has a version")
	w.await(t, "Added acme/V/a", kindOn(mesh.Added, "acme/V/a"))

	same := put(t, svc, withContent(node("acme/V/a", "Article"), `{ "b": [1, 2], "a": 1 }`))
	assert.Equal(t, first.Version, same.Version, "key order and whitespace are not a change")
	assert.True(t, first.LastModified.Equal(same.LastModified), "a no-op write keeps LastModified")
	got := firstOf(t, s.bound, "get acme/V/a", svc.Get("acme/V/a"))
	assert.Equal(t, first.Version, got.Version)

	// A barrier: a later write's frame proves the no-op's frame would have come.
	put(t, svc, node("acme/V/marker", "Article"))
	w.await(t, "Added acme/V/marker", kindOn(mesh.Added, "acme/V/marker"))
	for _, c := range w.received(t) {
		assert.False(t, kindOn(mesh.Updated, "acme/V/a")(c), "a no-op write sends no frame, got %s", describe(c))
	}

	prev := same
	for _, change := range []struct {
		what string
		n    mesh.Node
	}{
		{"content", withContent(node("acme/V/a", "Article"), `{"a":2,"b":[1,2]}`)},
		{"name", named(withContent(node("acme/V/a", "Article"), `{"a":2,"b":[1,2]}`), "renamed")},
		{"node type", named(withContent(node("acme/V/a", "Page"), `{"a":2,"b":[1,2]}`), "renamed")},
		{"state", func() mesh.Node {
			n := named(withContent(node("acme/V/a", "Page"), `{"a":2,"b":[1,2]}`), "renamed")
			n.State = mesh.StateDeleted
			return n
		}()},
	} {
		next := put(t, svc, change.n)
		assert.Greater(t, next.Version, prev.Version, "a change of %s bumps the version", change.what)
		assert.False(t, next.LastModified.Before(prev.LastModified), "a change of %s does not move LastModified back", change.what)
		prev = next
	}
}

// badInput: invalid nodes, paths and cancelled writes are refused with typed
// errors, and what was stored stays as it was.
func (s *suite) badInput(t testing.TB, svc mesh.Store) {
	stored := put(t, svc, withContent(node("acme/Docs/a", "Article"), `{"keep":true}`))

	_, err := svc.Put(writeContext(t), mesh.Node{Path: "acme/Docs/a", NodeType: "Article", Content: json.RawMessage(`{"keep":`)})
	var nodeErr *mesh.NodeError
	require.ErrorAs(t, err, &nodeErr, "content that is not JSON is a *mesh.NodeError")
	assert.Equal(t, "content", nodeErr.Field)

	// A node without a node type: queries select by it, so it is refused
	// (a store that took it wrote a node no typed query finds).
	_, err = svc.Put(writeContext(t), mesh.Node{Path: "acme/Docs/untyped", Content: json.RawMessage(`{}`)})
	require.ErrorAs(t, err, &nodeErr, "a node without a node type is a *mesh.NodeError")
	assert.Equal(t, "nodeType", nodeErr.Field)
	assert.ErrorContains(t, err, "Node.NodeType")
	_, err = firstErr(s.bound, svc.Get("acme/Docs/untyped"))
	assert.ErrorIs(t, err, rx.ErrEmpty, "a refused write writes nothing")

	_, err = svc.Put(writeContext(t), mesh.Node{Path: "/acme/x", NodeType: "Article"})
	var pathErr *mesh.PathError
	assert.ErrorAs(t, err, &pathErr, "a node with an invalid path is refused with the *mesh.PathError inside")

	assert.ErrorAs(t, svc.Delete(writeContext(t), "acme/../x"), &pathErr, "Delete refuses an invalid path")

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = svc.Put(cancelled, node("acme/Docs/new", "Article"))
	assert.ErrorIs(t, err, context.Canceled, "a cancelled write fails with the context's error")
	assert.ErrorIs(t, svc.Delete(cancelled, "acme/Docs/a"), context.Canceled)

	got := firstOf(t, s.bound, "get acme/Docs/a", svc.Get("acme/Docs/a"))
	assert.Equal(t, stored.Version, got.Version, "nothing was lost or changed")
	assert.JSONEq(t, `{"keep":true}`, string(got.Content))
	_, err = firstErr(s.bound, svc.Get("acme/Docs/new"))
	assert.ErrorIs(t, err, rx.ErrEmpty, "a cancelled write writes nothing")
}

// unstorable: a value one store cannot hold is refused by every store, with
// the same *mesh.NodeError, and writes nothing: code written against the
// embedded store must not meet its first refusal in production, on
// PostgreSQL (text without NUL, valid UTF-8, node types within 256 bytes,
// JSON strings and keys without U+0000, numbers within numeric's digits).
func (s *suite) unstorable(t testing.TB, svc mesh.Store) {
	for i, c := range []struct {
		n     mesh.Node
		field string
	}{
		{mesh.Node{NodeType: strings.Repeat("t", 257)}, "nodeType"},
		{mesh.Node{NodeType: "Article\x00"}, "nodeType"},
		{mesh.Node{NodeType: "Article", Name: "a\x00b"}, "name"},
		{mesh.Node{NodeType: "Article", Name: "caf\xe9"}, "name"},
		{mesh.Node{NodeType: "Article\xff"}, "nodeType"},
		{withContent(mesh.Node{NodeType: "Article"}, `{"x":"a\u0000b"}`), "content"},
		{withContent(mesh.Node{NodeType: "Article"}, `{"x":[{"\u0000":1}]}`), "content"},
		{withContent(mesh.Node{NodeType: "Article"}, `{"x":1e131072}`), "content"},
		{withContent(mesh.Node{NodeType: "Article"}, `{"x":[-1e-16384]}`), "content"},
		{withContent(mesh.Node{NodeType: "Article"}, `{"x":1.5e-16383}`), "content"},
		{withContent(mesh.Node{NodeType: "Article"}, `{"x":0e-16384}`), "content"},
		{withContent(mesh.Node{NodeType: "Article"}, `[1e99999999999]`), "content"},
	} {
		c.n.Path = fmt.Sprintf("acme/Bad/n%d", i)
		_, err := svc.Put(writeContext(t), c.n)
		var nodeErr *mesh.NodeError
		if assert.ErrorAs(t, err, &nodeErr, "%s (bad %s) is refused", c.n.Path, c.field) {
			assert.Equal(t, c.field, nodeErr.Field, "%s", c.n.Path)
		}
		assert.False(t, mesh.IsUnavailable(err), "a value no store can hold is the caller's error: %v", err)
		_, err = firstErr(s.bound, svc.Get(c.n.Path))
		assert.ErrorIs(t, err, rx.ErrEmpty, "%s: a refused write writes nothing", c.n.Path)
	}
	// Controls: at the bound, and the text \u0000 (an escaped backslash),
	// are stored.
	put(t, svc, node("acme/Bad/long", strings.Repeat("t", 256)))
	put(t, svc, withContent(node("acme/Bad/text", "Article"), `{"x":"\\u0000"}`))
	for i, c := range []string{`{"x":1e131071}`, `{"x":-1e-16383}`, `{"x":0.001e5,"1e999999":"1e999999"}`, `[0e99999]`} {
		put(t, svc, withContent(node(fmt.Sprintf("acme/Bad/number%d", i), "Article"), c))
	}
	got := firstOf(t, s.bound, "get acme/Bad/text", svc.Get("acme/Bad/text"))
	assert.JSONEq(t, `{"x":"\\u0000"}`, string(got.Content))
}
