package mesh

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tree is a small mesh: two partitions, a satellite and a few levels.
func tree(t *testing.T) []Node {
	t.Helper()
	paths := []string{"acme", "acme/Docs", "acme/Docs/a", "acme/Docs/a/x", "acme/Docs/b",
		"acme/Other", "acme/Docs/_Access/g1", "beta", "beta/Docs", "beta/Docs/c"}
	nodes := make([]Node, len(paths))
	for i, p := range paths {
		n, err := Node{Path: p}.Normalize()
		require.NoError(t, err)
		nodes[i] = n
	}
	return nodes
}

func matching(t *testing.T, query string, nodes []Node) []string {
	t.Helper()
	q := mustParse(t, query)
	var out []string
	for _, n := range nodes {
		if q.Matches(n) {
			out = append(out, n.Path)
		}
	}
	return out
}

func TestEachScopeSelectsItsPartOfTheTree(t *testing.T) {
	nodes := tree(t)
	cases := []struct {
		query string
		want  []string
	}{
		{"path:acme/Docs", []string{"acme/Docs"}},
		{"path:acme/Docs scope:children", []string{"acme/Docs/a", "acme/Docs/b"}},
		{"path:acme/Docs scope:descendants", []string{"acme/Docs/a", "acme/Docs/a/x", "acme/Docs/b", "acme/Docs/_Access/g1"}},
		{"path:acme/Docs scope:subtree", []string{"acme/Docs", "acme/Docs/a", "acme/Docs/a/x", "acme/Docs/b", "acme/Docs/_Access/g1"}},
		{"path:acme/Docs/a/x scope:ancestors", []string{"acme", "acme/Docs", "acme/Docs/a"}},
		{"path:acme/Docs/a scope:hierarchy", []string{"acme", "acme/Docs", "acme/Docs/a", "acme/Docs/a/x"}},
		{"namespace:acme/Docs", []string{"acme/Docs/a", "acme/Docs/b"}},
		{"namespace:acme/Docs scope:subtree", []string{"acme/Docs/a", "acme/Docs/a/x", "acme/Docs/b", "acme/Docs/_Access/g1"}},
		{"namespace:acme/Docs/_Access", []string{"acme/Docs/_Access/g1"}},
		{"PATH:ACME/docs", []string{"acme/Docs"}}, // paths compare case-insensitively
		{"scope:children", []string{"acme", "beta"}},
		{"namespace:", []string{"acme", "beta"}},
		{"[acme/Docs/b, beta/Docs]", []string{"acme/Docs/b", "beta/Docs"}},
		{"path:acme/Docs|beta/Docs scope:children", []string{"acme/Docs/a", "acme/Docs/b", "beta/Docs/c"}},
		{"path:*/Docs scope:children", []string{"acme/Docs/a", "acme/Docs/b", "beta/Docs/c"}},
		{"path:*/Docs/a*", []string{"acme/Docs/a", "acme/Docs/a/x"}}, // * spans segments
		// Ancestors of any path the glob matches: * spans segments, so beta/Docs/c
		// is an ancestor of beta/Docs/c/x/c.
		{"path:beta/*/c scope:ancestors", []string{"beta", "beta/Docs", "beta/Docs/c"}},
		{"path:beta/*c scope:ancestors", []string{"beta", "beta/Docs", "beta/Docs/c"}},
		{"path:acme/Docs/*/x scope:ancestors", []string{"acme", "acme/Docs", "acme/Docs/a", "acme/Docs/a/x",
			"acme/Docs/b", "acme/Docs/_Access/g1"}},
	}
	for _, c := range cases {
		assert.ElementsMatch(t, c.want, matching(t, c.query, nodes), c.query)
	}
	// Control: the scopes really differ on this tree, so a matcher that ignored
	// the scope would fail above.
	assert.NotEqual(t, matching(t, cases[2].query, nodes), matching(t, cases[3].query, nodes))
	// A query without an anchor looks everywhere.
	assert.Len(t, matching(t, "", nodes), len(nodes))
	assert.Empty(t, matching(t, "scope:ancestors", nodes), "the root has no ancestors")
}

func TestComparisonsAreNumericTemporalOrTextual(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	nine := Node{Path: "acme/nine", Version: 9, Name: "Beta", LastModified: at("2026-08-31T18:30:00Z"),
		Content: json.RawMessage(`{"rank": 9, "due": "2026-09-01T02:00:00+02:00"}`)}
	ten := Node{Path: "acme/ten", Version: 10, Name: "alpha", LastModified: at("2026-08-31T19:00:00Z"),
		Content: json.RawMessage(`{"rank": 10, "due": "2026-08-31T23:30:00Z"}`)}
	nodes := []Node{nine, ten}
	cases := []struct {
		query string
		want  []string
	}{
		// As strings "10" < "9"; as numbers 9 < 10.
		{"version:>9", []string{"acme/ten"}},
		{"content.rank:<10", []string{"acme/nine"}},
		{"version:9.0", []string{"acme/nine"}},
		// 2026-09-01T02:00+02:00 is 2026-09-01T00:00Z, after 23:30Z the day before.
		{"content.due:>2026-08-31T23:45:00Z", []string{"acme/nine"}},
		{"lastModified:>=2026-08-31T21:00:00+02:00", []string{"acme/ten"}},
		{"lastModified:>2026-08-31", []string{"acme/nine", "acme/ten"}},
		// Strings compare case-insensitively.
		{"name:>ALPHA", []string{"acme/nine"}},
		{"name:BETA", []string{"acme/nine"}},
		{"-name:beta", []string{"acme/ten"}},
	}
	for _, c := range cases {
		assert.ElementsMatch(t, c.want, matching(t, c.query, nodes), c.query)
	}
	// Controls: the orders above differ from plain string order.
	assert.Negative(t, compareValues("9", "10"))
	assert.Positive(t, compareValues("9", "10x"), "a non-number compares as a string")
	assert.Positive(t, compareValues("2026-09-01T02:00:00+02:00", "2026-08-31T23:30:00Z"))
	assert.Negative(t, compareValues("2026-09-01T02:00:00+02:00", "2026-09-01T01:00:00Z"))
	assert.Positive(t, compareValues("inf", "1"), "words like inf are not numbers")
}

func TestGlobsAreCaseInsensitiveAndOnlyTheStarIsSpecial(t *testing.T) {
	nodes := []Node{
		{Path: "a/1", Name: "Annual Report 2026"},
		{Path: "a/2", Name: "report?"},
		{Path: "a/3", Name: "r.port"},
		{Path: "a/4", Name: "Budget"},
	}
	assert.ElementsMatch(t, []string{"a/1", "a/2"}, matching(t, "name:*REPORT*", nodes))
	assert.ElementsMatch(t, []string{"a/2"}, matching(t, `name:"report?"`, nodes), "? is literal")
	assert.ElementsMatch(t, []string{"a/3"}, matching(t, "name:r.port", nodes), ". is literal")
	assert.ElementsMatch(t, []string{"a/1"}, matching(t, "name:annual*2026", nodes))
	assert.ElementsMatch(t, []string{"a/3", "a/4"}, matching(t, "-name:*report*", nodes))
	assert.ElementsMatch(t, []string{"a/1", "a/4"}, matching(t, "name:budget|annual*", nodes), "a list may hold globs")
	// Control: without the star the value must equal the whole name.
	assert.Empty(t, matching(t, "name:report", nodes))
}

func TestContentFieldsReadTheJSONContent(t *testing.T) {
	nodes := []Node{
		{Path: "a/1", Content: json.RawMessage(`{"accessObject":"rbuergi","roles":[{"role":"Admin"},{"role":"Viewer","denied":true}],"tags":["q1","Q2"]}`)},
		{Path: "a/2", Content: json.RawMessage(`{"accessObject":"other","tags":[]}`)},
		{Path: "a/3"},
		{Path: "a/4", Content: json.RawMessage(`not json`)},
	}
	assert.ElementsMatch(t, []string{"a/1"}, matching(t, `content.accessObject:"rbuergi"`, nodes))
	assert.ElementsMatch(t, []string{"a/1"}, matching(t, "content.ACCESSOBJECT:RBUERGI", nodes), "keys match case-insensitively")
	assert.ElementsMatch(t, []string{"a/1"}, matching(t, "content.tags:q2", nodes), "an array matches when an element does")
	assert.ElementsMatch(t, []string{"a/1"}, matching(t, "content.roles.role:viewer", nodes), "arrays of objects fan out")
	assert.ElementsMatch(t, []string{"a/1"}, matching(t, "content.roles.denied:true", nodes))
	assert.ElementsMatch(t, []string{"a/2", "a/3", "a/4"}, matching(t, "-content.tags:q1", nodes),
		"a negation holds where the field is absent")
	assert.Empty(t, matching(t, "content.roles:Admin", nodes), "an object is not a scalar value")
	// Control: the comparison reads content, not the node name.
	assert.Empty(t, matching(t, "content.accessObject:a", nodes))
}

func TestEveryFreeTextTermMustOccurInNamePathTypeOrContentValues(t *testing.T) {
	nodes := []Node{
		{Path: "acme/Docs/budget", NodeType: "Article", Name: "Annual Report", Content: json.RawMessage(`{"title":"Revenue 2026"}`)},
		{Path: "acme/Docs/notes", NodeType: "Page", Name: "Notes"},
	}
	assert.ElementsMatch(t, []string{"acme/Docs/budget"}, matching(t, `"annual report" revenue article budget`, nodes))
	assert.ElementsMatch(t, []string{"acme/Docs/budget", "acme/Docs/notes"}, matching(t, "DOCS", nodes))
	assert.Empty(t, matching(t, "annual notes", nodes), "every term must occur in the same node")
	// Control: content keys are not text, only values are.
	assert.Empty(t, matching(t, "title", nodes))
}

func TestNodeTypesListsTheTypesAQueryCanMatch(t *testing.T) {
	cases := []struct {
		query       string
		types       []string
		constrained bool
	}{
		{"nodeType:Article", []string{"Article"}, true},
		{"nodeType:Page|article|ARTICLE", []string{"article", "Page"}, true},
		{"(nodeType:A content.x:1) OR nodeType:B", []string{"A", "B"}, true},
		{"nodeType:A|B nodeType:B|C", []string{"B"}, true},
		{"nodeType:A nodeType:B", []string{}, true},
		{"content.x:1 (nodeType:A OR nodeType:B)", []string{"A", "B"}, true},
		{"nodeType:A OR content.x:1", nil, false},
		{"nodeType:Art*", nil, false},
		{"-nodeType:A", nil, false},
		{"nodeType:>A", nil, false},
		{"nodeType:42", nil, false}, // 42 also equals 42.0: the spelling is not the whole set
		{"path:acme", nil, false},
		{"", nil, false},
	}
	for _, c := range cases {
		types, constrained := mustParse(t, c.query).NodeTypes()
		assert.Equal(t, c.constrained, constrained, c.query)
		assert.Equal(t, c.types, types, c.query)
	}
}

func TestANodeOutsideTheTypesOfAConstrainedQueryNeverMatches(t *testing.T) {
	queries := []string{"nodeType:A", "nodeType:A|b content.x:1", "(nodeType:A content.x:1) OR (nodeType:B content.y:2)", "nodeType:A nodeType:B",
		"nodeType:A OR content.x:1", "-nodeType:A"}
	var nodes []Node
	for _, typ := range []string{"A", "a", "B", "C", "", "A*"} {
		for _, c := range []string{`{}`, `{"x":1}`, `{"x":1,"y":2}`} {
			nodes = append(nodes, Node{Path: "p/" + typ + strconv.Itoa(len(nodes)), NodeType: typ, Content: json.RawMessage(c)})
		}
	}
	unconstrainedMatchOutsideTypes := 0
	for _, s := range queries {
		q := mustParse(t, s)
		types, constrained := q.NodeTypes()
		for _, n := range nodes {
			inTypes := slices.ContainsFunc(types, func(t string) bool { return compareValues(t, n.NodeType) == 0 })
			if !q.Matches(n) || inTypes {
				continue
			}
			assert.False(t, constrained, "%q matches %s node %s outside its types %v", s, n.NodeType, n.Path, types)
			unconstrainedMatchOutsideTypes++
		}
	}
	// Control: the unconstrained queries do match nodes of other types, so a
	// NodeTypes that called them constrained would fail above.
	assert.Positive(t, unconstrainedMatchOutsideTypes)
}

func TestLessOrdersByTheSortFieldThenByPath(t *testing.T) {
	nodes := []Node{
		{Path: "acme/c", Version: 10},
		{Path: "acme/a", Version: 9},
		{Path: "acme/b", Version: 10},
		{Path: "acme/d", Version: 2},
	}
	order := func(query string) []string {
		q := mustParse(t, query)
		sorted := slices.Clone(nodes)
		slices.SortStableFunc(sorted, func(a, b Node) int {
			switch {
			case q.Less(a, b):
				return -1
			case q.Less(b, a):
				return 1
			}
			return 0
		})
		out := make([]string, len(sorted))
		for i, n := range sorted {
			out[i] = n.Path
		}
		return out
	}
	assert.Equal(t, []string{"acme/a", "acme/b", "acme/c", "acme/d"}, order(""))
	assert.Equal(t, []string{"acme/d", "acme/a", "acme/b", "acme/c"}, order("sort:version"), "numeric, ties by path")
	assert.Equal(t, []string{"acme/b", "acme/c", "acme/a", "acme/d"}, order("sort:version-desc"), "ties stay path ascending")
	assert.Equal(t, []string{"acme/d", "acme/c", "acme/b", "acme/a"}, order("sort:path-desc"))
	// Control: as strings "10" < "2", so a textual sort:version would put
	// acme/b and acme/c first and fail the numeric expectation above.
	assert.Less(t, "10", "2")
}

func TestNodesWithoutTheSortFieldSortLastInEitherDirection(t *testing.T) {
	with := Node{Path: "b", Content: json.RawMessage(`{"createdAt":"2026-09-01T00:00:00Z"}`)}
	without := Node{Path: "a"}
	for _, s := range []string{"sort:content.createdAt", "sort:content.createdAt-desc"} {
		q := mustParse(t, s)
		assert.True(t, q.Less(with, without), s)
		assert.False(t, q.Less(without, with), s)
	}
	// Control: by path alone "a" comes first.
	assert.True(t, mustParse(t, "").Less(without, with))
}

func TestLessIsAStrictWeakOrderOverMixedValues(t *testing.T) {
	values := []string{"2", "10", "1x", "2026-01-01", "2025-12-31T23:00:00-02:00", "abc", "ABC", "", "-1.5", "1e3"}
	nodes := make([]Node, len(values))
	for i, v := range values {
		nodes[i] = Node{Path: "n/" + strconv.Itoa(i), Content: json.RawMessage(`{"k":` + strconv.Quote(v) + `}`)}
	}
	q := mustParse(t, "sort:content.k")
	for _, a := range nodes {
		assert.False(t, q.Less(a, a), "irreflexive")
		for _, b := range nodes {
			if q.Less(a, b) {
				assert.False(t, q.Less(b, a), "asymmetric")
			}
			for _, c := range nodes {
				if q.Less(a, b) && q.Less(b, c) {
					assert.True(t, q.Less(a, c), "transitive: %s < %s < %s", a.Content, b.Content, c.Content)
				}
			}
		}
	}
	// Control: comparing pairwise by whichever reading both sides share is not
	// transitive on these values (2 < 10 numerically, "10" < "1x" < "2" as
	// strings), which is why Less ranks numbers, times and strings apart.
	assert.Negative(t, compareValues("2", "10"))
	assert.Negative(t, compareValues("10", "1x"))
	assert.Negative(t, compareValues("1x", "2"))
}
