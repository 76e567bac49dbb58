package mesh

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realisticQueries are queries as meshrx and its users write them. They seed
// FuzzParse and the round-trip tests.
func realisticQueries() []string {
	const content = "select:path,id,namespace,name,nodeType,content"
	return []string{
		"namespace:acme/Docs nodeType:Article -state:deleted name:*report* sort:lastModified-desc",
		"nodeType:Role partitions:all scope:subtree " + content + " limit:all",
		"nodeType:GroupMembership partitions:all scope:subtree " + content + " limit:all",
		"nodeType:Store/Plugin partitions:all scope:subtree select:path,id,namespace,name,nodeType limit:all",
		"namespace:_Access nodeType:AccessAssignment " + content + " limit:all",
		"path:_Policy nodeType:PartitionAccessPolicy " + content + " limit:all",
		"namespace: id:_Policy nodeType:PartitionAccessPolicy " + content,
		"path:acme scope:descendants nodeType:AccessAssignment " + content + " limit:all",
		"path:acme scope:descendants id:_Policy nodeType:PartitionAccessPolicy " + content + " limit:all",
		`namespace:_Access nodeType:AccessAssignment content.accessObject:"rbuergi" ` + content + " limit:all",
		`path:Admin scope:descendants nodeType:AccessAssignment content.accessObject:"rbuergi" ` + content + " limit:all",
		"namespace:rbuergi/_Notification nodeType:Notification sort:content.createdAt-desc",
		"path:acme scope:descendants nodeType:Notification sort:LastModified-asc limit:100",
		"namespace:Admin/Tiers",
		"path:Admin/Partition scope:children select:path",
		"nodeType:Notification",
		"[acme/a, acme/b, 'beta/c d']",
		"path:acme/a|beta/b scope:subtree",
		"(nodeType:Article OR nodeType:Page) version:>=2 version:<10 lastModified:>2026-01-01T00:00:00Z",
		`name:"annual report" OR name:'budget 2026' OR content.tags:(q1 OR q2)`,
		"namespace:A|B nodeType:(Role OR GroupMembership) -content.archived:true",
		`budget "annual report" nodeType:Article limit:20`,
		"namespace:acme AND nodeType:Article AND (state:new OR state:active)",
		`content.title:"say \"hi\"" content.path:'c:\\temp'`,
	}
}

func mustParse(t testing.TB, s string) *Query {
	t.Helper()
	q, err := Parse(s)
	require.NoError(t, err, "parse %q", s)
	return q
}

func eq(field string, v ...string) Cond {
	if len(v) > 1 {
		return Cond{Field: field, Op: OpIn, Values: v}
	}
	return Cond{Field: field, Op: OpEq, Values: v}
}

func TestParseBuildsTheQueryTheGrammarDescribes(t *testing.T) {
	cases := []struct {
		in   string
		want Query
	}{
		{"", Query{}},
		{"nodeType:Article name:x", Query{Filter: And{eq("nodeType", "Article"), eq("name", "x")}}},
		{"nodeType:Article AND name:x", Query{Filter: And{eq("nodeType", "Article"), eq("name", "x")}}},
		{"nodeType:A OR nodeType:B", Query{Filter: Or{eq("nodeType", "A"), eq("nodeType", "B")}}},
		{"nodeType:A or nodeType:B Or nodeType:C", Query{Filter: Or{eq("nodeType", "A"), eq("nodeType", "B"), eq("nodeType", "C")}}},
		{"content.x:1 (nodeType:A OR nodeType:B)", Query{Filter: And{eq("content.x", "1"), Or{eq("nodeType", "A"), eq("nodeType", "B")}}}},
		{"(nodeType:A content.x:1) OR nodeType:B", Query{Filter: Or{And{eq("nodeType", "A"), eq("content.x", "1")}, eq("nodeType", "B")}}},
		{"((nodeType:A))", Query{Filter: eq("nodeType", "A")}},
		{"-state:deleted", Query{Filter: Cond{Field: "state", Op: OpNe, Values: []string{"deleted"}}}},
		{"version:>3 version:>=4 version:<9 version:<=8", Query{Filter: And{
			Cond{Field: "version", Op: OpGt, Values: []string{"3"}}, Cond{Field: "version", Op: OpGe, Values: []string{"4"}},
			Cond{Field: "version", Op: OpLt, Values: []string{"9"}}, Cond{Field: "version", Op: OpLe, Values: []string{"8"}}}}},
		{"-version:>3 -version:<=8", Query{Filter: And{
			Cond{Field: "version", Op: OpLe, Values: []string{"3"}}, Cond{Field: "version", Op: OpGt, Values: []string{"8"}}}}},
		{"nodeType:A|B|C", Query{Filter: eq("nodeType", "A", "B", "C")}},
		{"nodeType:(A OR B)", Query{Filter: eq("nodeType", "A", "B")}},
		{"nodeType:( A or B | C )", Query{Filter: eq("nodeType", "A", "B", "C")}},
		{"nodeType:(A)", Query{Filter: eq("nodeType", "A")}},
		{"-nodeType:A|B", Query{Filter: Cond{Field: "nodeType", Op: OpNotIn, Values: []string{"A", "B"}}}},
		{"name:*report*", Query{Filter: Cond{Field: "name", Op: OpLike, Values: []string{"*report*"}}}},
		{"-name:*report*", Query{Filter: Cond{Field: "name", Op: OpNotLike, Values: []string{"*report*"}}}},
		{`name:"annual report"`, Query{Filter: eq("name", "annual report")}},
		{`name:'annual report'`, Query{Filter: eq("name", "annual report")}},
		{`name:"say \"hi\""`, Query{Filter: eq("name", `say "hi"`)}},
		{`name:'it\'s'`, Query{Filter: eq("name", "it's")}},
		{`name:"a\\b" name:"a\b"`, Query{Filter: And{eq("name", `a\b`), eq("name", `a\b`)}}},
		{`name:">3"`, Query{Filter: eq("name", ">3")}},
		{`name:"a b"|c`, Query{Filter: eq("name", "a b", "c")}},
		{"name:", Query{Filter: eq("name", "")}},
		{"lastModified:>2026-08-31T18:30:00Z", Query{Filter: Cond{Field: "lastModified", Op: OpGt, Values: []string{"2026-08-31T18:30:00Z"}}}},
		{`budget "annual report"`, Query{Text: []string{"budget", "annual report"}}},
		{`"or" 'and'`, Query{Text: []string{"or", "and"}}},
		{"[acme/a, beta/b]", Query{Paths: []string{"acme/a", "beta/b"}}},
		{`[ acme/a ,"beta/b c" ]`, Query{Paths: []string{"acme/a", "beta/b c"}}},
		{"path:acme/Docs", Query{Path: "acme/Docs"}},
		{"path:acme/a|beta/b", Query{Paths: []string{"acme/a", "beta/b"}}},
		{"path:acme/Docs scope:descendants", Query{Path: "acme/Docs", Scope: ScopeDescendants}},
		{"path:acme/Docs scope:HIERARCHY", Query{Path: "acme/Docs", Scope: ScopeHierarchy}},
		{"path:*/Docs", Query{Path: "*/Docs"}},
		{"namespace:acme/Docs", Query{Path: "acme/Docs", Scope: ScopeChildren}},
		{"namespace:acme/Docs scope:subtree", Query{Path: "acme/Docs", Scope: ScopeDescendants}},
		{"scope:exact namespace:acme/Docs", Query{Path: "acme/Docs", Scope: ScopeExact}},
		{"namespace:", Query{Scope: ScopeChildren}},
		{"namespace:A|B", Query{Filter: eq("namespace", "A", "B")}},
		{"-namespace:A", Query{Filter: Cond{Field: "namespace", Op: OpNe, Values: []string{"A"}}}},
		{"namespace:A OR namespace:B*", Query{Filter: Or{eq("namespace", "A"), Cond{Field: "namespace", Op: OpLike, Values: []string{"B*"}}}}},
		{"sort:name", Query{Sort: Sort{Field: "name"}}},
		{"sort:name-ASC", Query{Sort: Sort{Field: "name"}}},
		{"sort:lastModified-desc", Query{Sort: Sort{Field: "lastModified", Desc: true}}},
		{"sort:content.createdAt-desc", Query{Sort: Sort{Field: "content.createdAt", Desc: true}}},
		{"sort:path-asc", Query{}},
		{"sort:path-desc", Query{Sort: Sort{Field: "path", Desc: true}}},
		{"limit:20", Query{Limit: 20}},
		{"limit:ALL", Query{Limit: LimitAll}},
		{"select:path,NAME,content.createdAt", Query{Select: []string{"path", "name", "content.createdAt"}}},
		{"partitions:all", Query{AllPartitions: true}},
		{"NODETYPE:a MainNode:b LASTMODIFIED:c Content.Title:d content.createdAt:e", Query{Filter: And{
			eq("nodeType", "a"), eq("mainNode", "b"), eq("lastModified", "c"), eq("content.Title", "d"), eq("content.createdAt", "e")}}},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := Parse(c.in)
			require.NoError(t, err)
			assert.Equal(t, &c.want, got)
		})
	}
}

func TestParseErrorsNameTheOffsetAndSayWhatToDo(t *testing.T) {
	cases := []struct {
		bad    string
		offset int
		msg    string
		good   string // the input with the fault fixed: the negative control
	}{
		{`name:"annual report`, 5, `unclosed quote; add a closing "`, `name:"annual report"`},
		{`'abc`, 0, "unclosed quote; add a closing '", `'abc'`},
		{"(nodeType:A OR nodeType:B", 0, "unclosed parenthesis", "(nodeType:A OR nodeType:B)"},
		{"nodeType:A)", 10, "unmatched )", "nodeType:A"},
		{"name:1 ()", 7, "empty parentheses", "name:1"},
		{"nodeType:A OR", 11, "OR needs a term after it", "nodeType:A OR nodeType:B"},
		{"OR nodeType:A", 0, "OR needs a term before it", "nodeType:B OR nodeType:A"},
		{"nodeType:A OR OR nodeType:B", 11, "OR needs a term after it", "nodeType:A OR nodeType:B"},
		{"AND nodeType:A", 0, "AND needs a term before it", "nodeType:A"},
		{"nodeType:A AND", 11, "AND needs a term after it", "nodeType:A"},
		{"nodeType:()", 9, "empty value list", "nodeType:(A)"},
		{"nodeType:(A OR", 9, "unclosed value list", "nodeType:(A OR B)"},
		{"nodeType:(A B)", 12, "separate the values in a list with OR or |", "nodeType:(A OR B)"},
		{"nodeType:(A OR)", 12, "needs a value after it", "nodeType:(A OR B)"},
		{"nodeType:A|", 11, "empty value in a | list", "nodeType:A|B"},
		{"nodeType:A||B", 11, "empty value in a | list", "nodeType:A|B"},
		{"nodeType:|A", 9, "empty value in a | list", "nodeType:A"},
		{"version:>", 8, "missing value after >", "version:>1"},
		{"version:>=1|2", 11, "a comparison takes one value", "version:>=1"},
		{`name:"a"b`, 8, "unexpected character after closing quote", `name:"ab"`},
		{"name:a(b)", 6, "quote a value that contains parentheses", `name:"a(b)"`},
		// Not free text that silently matches nothing: a content property
		// the grammar cannot name is an error, however it is negated.
		{"content.título:Foo", 9, "content property name", "content.titulo:Foo"},
		{"namespace:acme -Content.Straße:x", 28, "content property name", "namespace:acme -Content.Strasse:x"},
		{"content.a.Key:>1", 10, "content property name", `"content.a.Key:>1"`},
		{"- state:deleted", 0, "- must be followed by field:value", "-state:deleted"},
		{"-deleted", 0, "- must be followed by field:value", "-state:deleted"},
		{"scope:sideways", 6, `unknown scope "sideways"; use one of exact, children`, "scope:subtree"},
		{"limit:0", 6, "limit must be a positive whole number or all", "limit:1"},
		{"limit:ten", 6, "limit must be a positive whole number or all", "limit:10"},
		{"limit:99999999999999999999", 6, "limit must be a positive whole number", "limit:999"},
		{"limit:1|2", 6, "limit: takes one value", "limit:2"},
		{"limit:5 limit:6", 8, "limit: is given twice", "limit:6"},
		{"sort:-desc", 5, "not a field name", "sort:name-desc"},
		{"sort:content", 5, "cannot sort by content", "sort:content.rank"},
		{"select:path,,name", 7, `select: needs a comma-separated list of field names; "" is not one`, "select:path,name"},
		{"partitions:some", 11, "partitions: takes only all", "partitions:all"},
		{"path:acme//x", 5, "invalid path: empty segment", "path:acme/x"},
		{"path:>acme", 5, "not a comparison", "path:acme"},
		{"path:acme namespace:beta", 10, "path: and namespace: both set where the query looks", "path:acme"},
		{"[acme/a] path:beta", 9, "path list and path: both set", "[acme/a, beta]"},
		{"[acme/a", 0, "unclosed path list; add a ]", "[acme/a]"},
		{"[]", 0, "empty path list", "[a]"},
		{"[a,]", 3, "empty entry in path list", "[a]"},
		{"[a b]", 3, "separate the paths in a list with commas", "[a, b]"},
		{"[a/../b]", 1, "invalid path in list", "[a/b]"},
		{"-path:acme", 0, "path: cannot be negated", "path:acme"},
		{"-limit:5", 0, "limit: cannot be negated", "limit:5"},
		{"nodeType:A OR limit:5", 14, "limit: applies to the whole query and cannot be part of an OR", "(nodeType:A) limit:5"},
		{"nodeType:A OR nodeType:B path:acme", 25, "path: applies to the whole query", "(nodeType:A OR nodeType:B) path:acme"},
		{"(nodeType:A OR scope:children)", 15, "scope: applies to the whole query", "(nodeType:A) scope:children"},
		{"nodeType:A OR [a, b]", 14, "a path list applies to the whole query", "nodeType:A [a, b]"},
		{"nodeType:A OR budget", 14, "free text cannot be part of an OR", "nodeType:A budget"},
		{"content:x", 0, "content: needs a property", "content.title:x"},
		{"content..a:x", 0, "empty property name", "content.a:x"},
		{"nodeTyp:Article", 0, `unknown field "nodeTyp"; did you mean nodeType?`, "nodeType:Article"},
		{"title:Foo", 0, `unknown field "title"; a content property is written content.title`, "content.title:Foo"},
		{"nodeType:A -stat:deleted", 11, `unknown field "stat"; did you mean state?`, "nodeType:A -state:deleted"},
		{"sort:nme", 5, `unknown field "nme"; did you mean name?`, "sort:name"},
		{"sort:createdAt-desc", 5, `unknown field "createdAt"; a content property is written content.createdAt`, "sort:content.createdAt-desc"},
		{"select:path,nmae", 7, `unknown field "nmae"; did you mean name?`, "select:path,name"},
		{"source:activity", 0, "source: is not supported", "nodeType:Activity"},
		{`""`, 0, "empty quoted text", `"x"`},
		{"name:\x07bell", 5, "control character U+0007", "name:bell"},
		{"name:\xffx", 5, "not valid UTF-8", "name:x"},
	}
	for _, c := range cases {
		t.Run(c.bad, func(t *testing.T) {
			q, err := Parse(c.bad)
			assert.Nil(t, q)
			var pe *ParseError
			require.True(t, errors.As(err, &pe), "want a *ParseError, got %v", err)
			assert.Equal(t, c.bad, pe.Query)
			assert.Equal(t, c.offset, pe.Offset, "offset in %q: %v", c.bad, err)
			assert.Contains(t, pe.Msg, c.msg)
			_, err = Parse(c.good)
			assert.NoError(t, err, "the fixed input parses")
		})
	}
}

// A misspelt field or sort key is an error naming it and what was probably
// meant, never a content property that silently matches nothing.
func TestAnUnknownFieldOrSortKeyIsAParseErrorSuggestingTheNearestField(t *testing.T) {
	cases := []struct{ query, field, suggestion string }{
		{"nodeTyp:Article", "nodeTyp", "nodeType"},
		{"namespace:acme NODETPYE:Article", "NODETPYE", "nodeType"},
		{"lastModifed:>2026-01-01", "lastModifed", "lastModified"},
		{"mainnode:acme/a", "", ""}, // the control: field names are case-insensitive
		{"sort:nme", "nme", "name"},
		{"sort:versoin-desc", "versoin", "version"},
		{"createdAt:x", "createdAt", "content.createdAt"},
		{"sort:createdAt", "createdAt", "content.createdAt"},
		{"select:path,title", "title", "content.title"},
		{"scop:children path:acme", "scop", "scope"},
		{"content.createdAt:x sort:content.createdAt select:content.title", "", ""}, // the control
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			_, err := Parse(c.query)
			if c.field == "" {
				require.NoError(t, err)
				return
			}
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.field, pe.Field)
			assert.Equal(t, c.suggestion, pe.Suggestion)
			assert.Contains(t, pe.Msg, `"`+c.field+`"`)
			fixed := strings.Replace(c.query, c.field, c.suggestion, 1)
			_, err = Parse(fixed)
			assert.NoError(t, err, "the suggestion %q makes %q parse", c.suggestion, fixed)
		})
	}
}

func TestAParseErrorMessageQuotesTheInputAtItsOffset(t *testing.T) {
	_, err := Parse("nodeType:Article scope:sideways limit:5")
	require.Error(t, err)
	assert.Equal(t, `mesh: query: at offset 23 near "sideways limit:5": unknown scope "sideways"; `+
		`use one of exact, children, descendants, subtree, ancestors, hierarchy`, err.Error())
	_, err = Parse("nodeType:A OR")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `offset 11 near "OR"`)
	_, err = Parse("name:")
	require.NoError(t, err, "control: an empty value is an equality with the empty string")
}

func TestParenthesesNestedBeyondTheBoundAreRefused(t *testing.T) {
	nest := func(n int) string {
		return strings.Repeat("(", n) + "nodeType:A" + strings.Repeat(")", n)
	}
	q, err := Parse(nest(MaxQueryDepth))
	require.NoError(t, err, "control: nesting at the bound parses")
	assert.Equal(t, eq("nodeType", "A"), q.Filter)
	_, err = Parse(nest(MaxQueryDepth + 1))
	var pe *ParseError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, MaxQueryDepth, pe.Offset)
	assert.Contains(t, pe.Msg, "nested deeper than 64 levels")
}

func TestInputOverTheSizeLimitIsRefused(t *testing.T) {
	atLimit := "name:" + strings.Repeat("x", MaxQueryLen-len("name:"))
	_, err := Parse(atLimit)
	require.NoError(t, err, "control: a query at the limit parses")
	_, err = Parse(atLimit + "x")
	var pe *ParseError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, MaxQueryLen, pe.Offset)
	assert.Contains(t, pe.Msg, "query is 4097 bytes; the limit is 4096")
	assert.Less(t, len(err.Error()), 200, "the message does not repeat the whole input")
}

func TestAQuotedValueIsLiteralButAStarStillGlobs(t *testing.T) {
	q := mustParse(t, `name:"<=3" name:"a b*"`)
	assert.Equal(t, And{eq("name", "<=3"), Cond{Field: "name", Op: OpLike, Values: []string{"a b*"}}}, q.Filter)
	// Control: unquoted, the same characters are a comparison.
	assert.Equal(t, Cond{Field: "name", Op: OpLe, Values: []string{"3"}}, mustParse(t, "name:<=3").Filter)
}

func FuzzParse(f *testing.F) {
	for _, s := range realisticQueries() {
		f.Add(s)
	}
	router, err := NewRouter(RouterConfig{InstanceLocations: map[string][]string{"MenuItem": {"namespace:Admin/Menu"}}})
	require.NoError(f, err)
	partitions := []string{"acme", "admin", "beta"}
	a := Node{Path: "acme/Docs/a", Namespace: "acme/Docs", ID: "a", NodeType: "Article", Name: "Annual report",
		Content: json.RawMessage(`{"title":"Q1","tags":["q1","x"],"rank":3}`), Version: 4,
		LastModified: time.Date(2026, 8, 31, 0, 0, 0, 0, time.UTC)}
	b := Node{Path: "beta/_Notification/n", NodeType: "Notification", Name: "bell"}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err != nil {
			var pe *ParseError
			require.True(t, errors.As(err, &pe), "error is a *ParseError: %v", err)
			require.GreaterOrEqual(t, pe.Offset, 0)
			require.LessOrEqual(t, pe.Offset, len(s))
			require.NotEmpty(t, pe.Msg)
			_ = pe.Error()
			return
		}
		canon := q.String()
		back, err := Parse(canon)
		if len(canon) > MaxQueryLen {
			// The canonical form may spell the query longer (namespace:X is
			// path:X scope:children); past the limit it is refused like any
			// input, by the length rule and nothing else.
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, MaxQueryLen, pe.Offset)
		} else {
			require.NoError(t, err, "canonical form %q of %q does not parse", canon, s)
			require.Equal(t, q, back, "canonical form %q of %q", canon, s)
			require.Equal(t, canon, back.String(), "canonical form is a fixed point")
		}
		// The rest of the package must take any parsed query without panicking.
		q.Matches(a)
		q.Matches(b)
		q.Less(a, b)
		q.NodeTypes()
		DescribeShape(q)
		_, _ = router.Route(q, partitions)
	})
}

func BenchmarkParseTypicalQuery(b *testing.B) {
	const typical = "namespace:acme/Docs nodeType:Article -state:deleted name:*report* sort:lastModified-desc"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(typical); err != nil {
			b.Fatal(err)
		}
	}
}
