package mesh_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

func TestSortNodesOrdersExactlyAsLess(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var nodes []mesh.Node
	for i := range 300 {
		n := mesh.Node{Path: fmt.Sprintf("acme/n%03d", r.IntN(1000)), Name: fmt.Sprintf("N%d", r.IntN(20))}
		switch i % 4 {
		case 0:
			n.Content = json.RawMessage(fmt.Sprintf(`{"createdAt":"2026-01-%02dT00:00:00Z"}`, 1+r.IntN(28)))
		case 1:
			n.Content = json.RawMessage(fmt.Sprintf(`{"createdAt":%d}`, r.IntN(50)))
		case 2:
			n.Content = json.RawMessage(`{"createdAt":"soon"}`)
		}
		nodes = append(nodes, n)
	}
	for _, s := range []string{"namespace:acme", "namespace:acme sort:content.createdAt-desc", "namespace:acme sort:name", "namespace:acme sort:name-desc"} {
		q, err := mesh.Parse(s)
		require.NoError(t, err)
		want := slices.Clone(nodes)
		slices.SortStableFunc(want, func(a, b mesh.Node) int {
			switch {
			case q.Less(a, b):
				return -1
			case q.Less(b, a):
				return 1
			}
			return 0
		})
		got := slices.Clone(nodes)
		q.SortNodes(got)
		require.Equal(t, want, got, s)
	}
}
