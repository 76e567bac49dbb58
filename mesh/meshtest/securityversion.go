package meshtest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// storeWriteMethods names the mesh.Store methods that write, each of which
// securityVersionMoves writes through; storeReadMethods names the others.
// Every method of mesh.Store is in exactly one of them (the suite's own
// test checks it), so a write method added to mesh.Store fails that test
// until the security version row writes through it.
func storeWriteMethods() []string { return []string{"Put", "PutIfVersion", "Delete"} }

// storeReadMethods names the mesh.Store methods that do not write.
func storeReadMethods() []string { return []string{"Query", "Get", "Changes"} }

// securityWrite is one write through a write method of mesh.Store: what it
// does to the node at path (of nodeType when it writes one).
type securityWrite struct {
	method string // the mesh.Store method it calls
	what   string
	write  func(ctx context.Context, svc mesh.Store, path, nodeType string) error
}

// securityWrites are writes through every method StoreWriteMethods names:
// an insert, a change of content and a delete, and for Put a change of
// type into and out of the set, each run on a gated and an ungated type.
func securityWrites() []securityWrite {
	put := func(content string) func(context.Context, mesh.Store, string, string) error {
		return func(ctx context.Context, svc mesh.Store, path, nodeType string) error {
			_, err := svc.Put(ctx, mesh.Node{Path: path, NodeType: nodeType, Content: json.RawMessage(content)})
			return err
		}
	}
	putIfVersion := func(content string) func(context.Context, mesh.Store, string, string) error {
		return func(ctx context.Context, svc mesh.Store, path, nodeType string) error {
			expected := int64(0)
			n, err := rx.First(ctx, svc.Get(path))
			switch {
			case err == nil:
				expected = n.Version
			case !errors.Is(err, rx.ErrEmpty):
				return err
			}
			_, err = svc.PutIfVersion(ctx, mesh.Node{Path: path, NodeType: nodeType, Content: json.RawMessage(content)}, expected)
			return err
		}
	}
	return []securityWrite{
		{"Put", "inserts", put(`{"n":1}`)},
		{"Put", "changes the content of", put(`{"n":2}`)},
		{"Delete", "deletes", func(ctx context.Context, svc mesh.Store, path, _ string) error { return svc.Delete(ctx, path) }},
		{"PutIfVersion", "inserts", putIfVersion(`{"n":1}`)},
		{"PutIfVersion", "changes the content of", putIfVersion(`{"n":2}`)},
		{"Delete", "deletes", func(ctx context.Context, svc mesh.Store, path, _ string) error { return svc.Delete(ctx, path) }},
	}
}

// securityVersionMoves checks that every write of a gated type, through
// every write method of mesh.Store, moves the store's security version (a
// reader that keeps what it decided at a version — an access fold, a kept
// authentication — must see every such write), and that a write of an
// ungated type does not (such readers read only gated types, and would
// otherwise start over on every ordinary write). A change of type into or
// out of the gated set is a write of a gated type. SecuritySnapshot's
// Version is the same version. It uses a security type, which every store
// gates with zero options.
// Negative control: a store whose Delete leaves the version where it was
// fails it (see the suite's own test).
func (s *suite) securityVersionMoves(t testing.TB, svc mesh.Store) {
	reader, ok := svc.(mesh.SecurityReader)
	if !ok {
		t.Skip("the store keeps no security materialisation")
	}
	versioner, _ := svc.(mesh.SecurityVersioner)
	ctx := writeContext(t)
	version := func() mesh.SecurityVersion {
		t.Helper()
		snap, err := reader.SecurityNodes(ctx)
		require.NoError(t, err)
		if versioner != nil {
			v, err := versioner.SecurityVersion(ctx)
			require.NoError(t, err)
			require.Equal(t, snap.Version, v, "SecurityVersion is the version SecurityNodes returns")
		}
		return snap.Version
	}
	const gated, ungated = mesh.PartitionAccessPolicyType, "Article"
	written := map[string]bool{}
	for _, w := range securityWrites() {
		written[w.method] = true
		for _, typ := range []string{gated, ungated} {
			path := "acme/Docs/_v" + typ
			before := version()
			require.NoError(t, w.write(ctx, svc, path, typ), "%s %s a %s", w.method, w.what, typ)
			after := version()
			if typ == gated {
				assert.NotEqual(t, before, after, "%s that %s a node of the gated type %s moves the security version", w.method, w.what, typ)
				assert.Greater(t, after.Seq, before.Seq, "%s that %s a %s: the counter moves forward", w.method, w.what, typ)
				assert.NotEqual(t, before.Token, after.Token, "%s that %s a %s: with a fresh token", w.method, w.what, typ)
				continue
			}
			assert.Equal(t, before, after, "%s that %s a node of the ungated type %s leaves the security version", w.method, w.what, typ)
		}
	}
	for _, m := range storeWriteMethods() {
		assert.True(t, written[m], "the row writes through %s", m)
	}
	// A change of type into and out of the gated set.
	for _, change := range []struct{ from, to string }{{ungated, gated}, {gated, ungated}} {
		path := "acme/Docs/_vchange"
		put(t, svc, mesh.Node{Path: path, NodeType: change.from, Content: json.RawMessage(`{}`)})
		before := version()
		put(t, svc, mesh.Node{Path: path, NodeType: change.to, Content: json.RawMessage(`{}`)})
		assert.NotEqual(t, before, version(), "a Put that changes a node's type from %s to %s moves the security version", change.from, change.to)
		del(t, svc, path)
	}
}
