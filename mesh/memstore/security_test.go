package memstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
)

func securityPaths(t *testing.T, s *memstore.Store) (mesh.SecurityVersion, []string) {
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
	types := append(slices.Clone(accessTypes), "Plugin")
	s, err := memstore.New(memstore.Options{GatedTypes: types})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	for i, typ := range types {
		path := "acme/_Access/x" + typ
		if i%2 == 1 {
			path = "_Access/" + typ // and the global satellite schema
		}
		before, _ := securityPaths(t, s)
		_, err := s.Put(ctx, mesh.Node{Path: path, NodeType: typ})
		require.NoError(t, err)
		after, paths := securityPaths(t, s)
		assert.Greater(t, after.Seq, before.Seq, typ)
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

func TestSecurityVersionIsTheVersionTheNodesWouldHave(t *testing.T) {
	ctx := context.Background()
	s, err := memstore.New(memstore.Options{GatedTypes: accessTypes})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	version := func() mesh.SecurityVersion {
		t.Helper()
		v, err := s.SecurityVersion(ctx)
		require.NoError(t, err)
		snap, _ := securityPaths(t, s)
		require.Equal(t, snap, v, "the version SecurityNodes returns")
		return v
	}
	v0 := version()
	_, err = s.Put(ctx, mesh.Node{Path: "acme/Docs/a", NodeType: "Article"})
	require.NoError(t, err)
	assert.Equal(t, v0, version(), "a write of another type does not move it")
	_, err = s.Put(ctx, mesh.Node{Path: "acme/_Access/a", NodeType: "AccessAssignment"})
	require.NoError(t, err)
	v1 := version()
	assert.Greater(t, v1.Seq, v0.Seq, "a security write moves it")
	assert.NotEqual(t, v0.Token, v1.Token, "and draws a fresh token")

	require.NoError(t, s.Close())
	_, err = s.SecurityVersion(ctx)
	assert.True(t, mesh.IsUnavailable(err), "a closed store cannot tell: %v", err)
}
