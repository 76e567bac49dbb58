package sqlgen

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// PostgreSQL refuses a regular expression past some tens of thousands of
// spelled-out characters ("regular expression is too complex"), so a long
// query value ended the read with an error where mesh answers. Each read
// now answers as mesh does. Control (run): without the length bounds the
// first five statements and the long subtree anchor failed with SQLSTATE
// 2201B; the in-lists and the ancestors anchor, which the pattern-size bound
// also covers, passed.
func TestAVeryLongQueryValueIsAnsweredAsMeshAnswersIt(t *testing.T) {
	ctx, db := openDB(t)
	stored := loadTestMesh(ctx, t, db)
	long := strings.Repeat("a", 50000)
	var universe []mesh.Node
	for _, s := range []string{"acme", "beta"} {
		universe = append(universe, stored[mesh.NodesTable][s]...)
	}
	for _, q := range []*mesh.Query{
		{Filter: mesh.Cond{Field: "content.title", Op: mesh.OpEq, Values: []string{long}}},
		{Filter: mesh.Cond{Field: "content.title", Op: mesh.OpNe, Values: []string{long}}},
		{Filter: mesh.Cond{Field: "content." + long, Op: mesh.OpEq, Values: []string{"x"}}},
		{Filter: mesh.Cond{Field: "version", Op: mesh.OpEq, Values: []string{long}}},
		{Filter: mesh.Cond{Field: "lastModified", Op: mesh.OpEq, Values: []string{long}}},
		{Filter: mesh.Cond{Field: "name", Op: mesh.OpIn, Values: slicesOf(strings.Repeat("k", 1000), 40)}},
		{Filter: mesh.Cond{Field: "content.title", Op: mesh.OpIn, Values: slicesOf(strings.Repeat("k", 1000), 40)}},
		{Path: "acme/" + strings.Repeat("k/", 300) + "*", Scope: mesh.ScopeAncestors},
		{Path: "acme/" + long, Scope: mesh.ScopeSubtree},
	} {
		sel, err := Build(q, mesh.NodesTable, []string{"acme", "beta"})
		require.NoError(t, err)
		got, err := query(ctx, db, sel.SQL, sel.Args...)
		if !assert.NoError(t, err, "%.80s", q.String()) {
			continue
		}
		var answer []mesh.Node
		for _, n := range got {
			if q.Matches(n) {
				answer = append(answer, n)
			}
		}
		assert.Equal(t, paths(reference(q, universe)), paths(finish(q, answer)), "%.80s", q.String())
	}
}

// slicesOf returns n distinct values: v with a different suffix each.
func slicesOf(v string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = v + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	return out
}
