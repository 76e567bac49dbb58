package memstore_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx"
)

// bound is the real-time budget of a blocking wait in these tests. The store
// delivers within microseconds, so a healthy run never comes near it; it is
// a ceiling for a hang, as generous as testkit.Bound (a loaded machine can
// pause a goroutine for seconds).
const bound = testkit.Bound

func newStore(t testing.TB, opts memstore.Options) *memstore.Store {
	t.Helper()
	s, err := memstore.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func put(t testing.TB, s *memstore.Store, path, nodeType, content string) mesh.Node {
	t.Helper()
	n := mesh.Node{Path: path, NodeType: nodeType}
	if content != "" {
		n.Content = json.RawMessage(content)
	}
	stored, err := s.Put(context.Background(), n)
	require.NoError(t, err, "put %s", path)
	return stored
}

func first[T any](t testing.TB, src rx.Observable[T]) T {
	t.Helper()
	v, err := firstErr(src)
	require.NoError(t, err)
	return v
}

func firstErr[T any](src rx.Observable[T]) (T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	return rx.First(ctx, src)
}

func paths(items []mesh.Node) []string {
	ps := make([]string, 0, len(items))
	for _, n := range items {
		ps = append(ps, n.Path)
	}
	return ps
}

// settle waits, within bound, until every subscriber has received what the
// writes so far queued for it: frames are delivered off the writer's
// goroutine.
func settle(t testing.TB, s *memstore.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	require.NoError(t, s.Settle(ctx))
}

// accessTypes are the security types a store's user declares as gated, as
// auth does (auth.SecurityTypes); mesh names none of its own.
var accessTypes = []string{"Role", "GroupMembership", "AccessAssignment", "PartitionAccessPolicy"}
