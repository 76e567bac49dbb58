package mesh

import (
	"cmp"
	"slices"
)

// SortNodes sorts nodes in place into q's order (the same order as Less),
// reading each node's sort key once rather than once per comparison.
func (q *Query) SortNodes(nodes []Node) {
	if len(nodes) < 2 {
		return
	}
	type keyed struct {
		key  sortValue
		has  bool
		path string
		i    int
	}
	keys := make([]keyed, len(nodes))
	for i, n := range nodes {
		k := keyed{path: pathOf(n), i: i}
		if q != nil && q.Sort.Field != "" {
			k.key, k.has = sortKey(n, q.Sort.Field)
		}
		keys[i] = k
	}
	desc := q != nil && q.Sort.Desc
	slices.SortStableFunc(keys, func(a, b keyed) int {
		switch {
		case a.has && !b.has:
			return -1
		case !a.has && b.has:
			return 1
		case a.has && b.has:
			if c := a.key.compare(b.key); c != 0 {
				if desc {
					return -c
				}
				return c
			}
		}
		return cmp.Compare(a.path, b.path)
	})
	sorted := make([]Node, len(nodes))
	for i, k := range keys {
		sorted[i] = nodes[k.i]
	}
	copy(nodes, sorted)
}
