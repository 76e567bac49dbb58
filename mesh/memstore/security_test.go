package memstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
)

func securityPaths(t *testing.T, s *memstore.Store) (int64, []string) {
	t.Helper()
	snap, err := s.SecurityNodes(context.Background())
	require.NoError(t, err)
	var ps []string
	for _, n := range snap.Nodes {
		ps = append(ps, n.Path)
	}
	return snap.Version, ps
}

func TestEverySecurityTypeWriteLandsInTheMaterialisation(t *testing.T) {
	ctx := context.Background()
	s, err := memstore.New(memstore.Options{GatedTypes: []string{"Plugin"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	types := append(mesh.SecurityTypes(), "Plugin")
	for i, typ := range types {
		path := "acme/_Access/x" + typ
		if i%2 == 1 {
			path = "_Access/" + typ // and the global satellite schema
		}
		before, _ := securityPaths(t, s)
		_, err := s.Put(ctx, mesh.Node{Path: path, NodeType: typ})
		require.NoError(t, err)
		after, paths := securityPaths(t, s)
		assert.Greater(t, after, before, typ)
		assert.Contains(t, paths, path, "a %s write lands in the materialisation", typ)

		// A type change out of the set removes it; back in, it returns.
		_, err = s.Put(ctx, mesh.Node{Path: path, NodeType: "Article"})
		require.NoError(t, err)
		_, paths = securityPaths(t, s)
		assert.NotContains(t, paths, path, typ)
		_, err = s.Put(ctx, mesh.Node{Path: path, NodeType: typ})
		require.NoError(t, err)
		require.NoError(t, s.Delete(ctx, path))
		_, paths = securityPaths(t, s)
		assert.NotContains(t, paths, path, "a %s delete leaves the materialisation", typ)
	}
	// Negative control: other types never enter it.
	_, err = s.Put(ctx, mesh.Node{Path: "acme/Docs/a", NodeType: "Article"})
	require.NoError(t, err)
	_, paths := securityPaths(t, s)
	assert.Empty(t, paths)
}
