package sqlgen

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// The partitions of the test mesh; each is stored in the schema of its
// lower-cased name.
var testPartitions = []string{"Acme", "beta", "Gamma"}

// Values chosen to trip a translation that is not exact: case variants
// that only Go's case mapping relates (Kelvin sign, dotted İ, final sigma),
// LIKE metacharacters, things that read as numbers or times, empty and
// NULL, a newline.
var (
	segmentPool = []string{"Docs", "docs", "DOCS2", "Reports", "2024-01-05", "42", "x_y", "xAy", "50%", "500",
		`back\slash`, "KelvinKey", "kelvin\u212Aey", "İstanbul", "istanbul", "Straße", "a*b", "Σίσυφος",
		"ΣΊΣΥΦΟΣ", "x1", "X11", "notes"}
	namePool = []string{"Alpha", "ALPHA report", "alpha", "alpha beta", "100% done", "100 items", "under_score",
		"underXscore", `back\slash`, "\u212Aelvin", "kelvin", "Straße", "STRASSE", "İzmir", "izmir", "2024-03-01",
		"2024-03-01T00:00:00Z", "42", "042", "4.2e1", "", "multi\nline", "star*name", "Σίσυφος", "ΣΊΣΥΦΟΣ",
		"report 2024", "Zeta", "zeta"}
	typePool = []string{"Article", "article", "ARTICLE", "Page", "Report", "", "AccessAssignment", "42",
		"2024-01-05", "Notification"}
)

// testMesh is the generated data: rows by schema and table.
type testMesh struct {
	rows []row
}

func generateMesh(t testing.TB, seed uint64) testMesh {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(pool []string) string { return pool[r.IntN(len(pool))] }
	maybe := func(pool []string) *string {
		if r.IntN(8) == 0 {
			return nil
		}
		return ptr(pick(pool))
	}
	var m testMesh
	for _, part := range testPartitions {
		schema := strings.ToLower(part)
		used := map[string]bool{}
		add := func(table, ns, id string, owner *string) bool {
			p := mesh.JoinPath(ns, id)
			if used[table+"\x00"+p] {
				return false
			}
			used[table+"\x00"+p] = true
			m.rows = append(m.rows, row{
				schema: schema, table: table, namespace: ns, id: id,
				name: maybe(namePool), nodeType: maybe(typePool), owner: owner,
				content: generateContent(t, r), version: generateVersion(r), state: int16(r.IntN(5)),
				modified: generateTime(r),
			})
			return true
		}
		add(mesh.NodesTable, "", part, ptr(part))
		nodes := []string{part}
		for len(nodes) < 70 {
			parent := nodes[r.IntN(len(nodes))]
			if strings.Count(parent, "/") >= 3 {
				continue
			}
			id := pick(segmentPool)
			var owner *string
			switch r.IntN(10) {
			case 0:
			case 1:
				owner = ptr("")
			case 2:
				owner = ptr(testPartitions[r.IntN(len(testPartitions))] + "/Docs")
			default:
				owner = ptr(mesh.JoinPath(parent, id))
			}
			if add(mesh.NodesTable, parent, id, owner) {
				nodes = append(nodes, mesh.JoinPath(parent, id))
			}
		}
		for i := range 40 {
			ownerPath := nodes[r.IntN(len(nodes))]
			table, seg := "access", "_Access"
			if i%3 == 0 {
				table, seg = "notifications", "_Notification"
			}
			add(table, ownerPath+"/"+seg, fmt.Sprintf("g%d", i), ptr(ownerPath))
		}
	}
	return m
}

func generateVersion(r *rand.Rand) int64 {
	switch r.IntN(20) {
	case 0:
		return 1<<53 + 1 // not exact as float64
	case 1:
		return 1 << 53
	case 2:
		return -3
	case 3:
		return math.MaxInt64
	}
	return int64(r.IntN(15))
}

func generateTime(r *rand.Rand) time.Time {
	edges := []time.Time{
		time.Date(0, 6, 1, 0, 0, 0, 0, time.UTC),  // 1 BC: the first year mesh reads as a time
		time.Date(-4, 6, 1, 0, 0, 0, 0, time.UTC), // before it: mesh compares the text
		time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(2024, 1, 5, 3, 4, 5, 0, time.UTC),
		time.Date(2024, 1, 10, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 1, 10, 0, 0, 0, 1000, time.UTC),
	}
	if r.IntN(8) == 0 {
		return edges[r.IntN(len(edges))]
	}
	t := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(60*24*3600)) * time.Second)
	if r.IntN(3) > 0 {
		t = t.Add(time.Duration(r.IntN(1e6)) * time.Microsecond)
	}
	return t
}

// generateContent returns raw JSON (nil for SQL NULL) with the shapes mesh
// walks specially: arrays at every level, keys differing only in case,
// numbers written several ways, strings that read as numbers or times,
// nulls, and top-level non-objects.
func generateContent(t testing.TB, r *rand.Rand) *string {
	switch r.IntN(14) {
	case 0:
		return nil
	case 1:
		return ptr("null")
	case 2:
		return ptr(`["a", {"title": "Alpha", "meta": {"owner": "bob"}}, [["deep"]]]`)
	case 3:
		return ptr(`"just a string"`)
	}
	pickAny := func(vs ...any) any { return vs[r.IntN(len(vs))] }
	obj := map[string]any{}
	maybe := func(key string, v func() any) {
		if r.IntN(3) > 0 {
			obj[key] = v()
		}
	}
	maybe(pickAny("title", "Title", "TITLE").(string), func() any { return namePool[r.IntN(len(namePool))] })
	if r.IntN(6) == 0 {
		obj["title"], obj["TITLE"] = "lower key", "upper key"
	}
	maybe("count", func() any {
		return pickAny(json.Number("7"), json.Number("12"), json.Number("2.50"), json.Number("1e400"),
			json.Number("-0"), "7", "seven", json.Number(fmt.Sprint(r.IntN(20))))
	})
	maybe("price", func() any { return pickAny(json.Number("1.50"), json.Number("10"), "1.5", json.Number("15e-1")) })
	maybe("tags", func() any {
		return pickAny(
			[]any{"a", "B", []any{"nested", "X"}, map[string]any{"k": "v"}, json.Number("3"), true, nil},
			[]any{"b"}, "a", []any{}, []any{[]any{[]any{"deep"}}})
	})
	maybe("createdAt", func() any {
		return pickAny("2024-01-02T03:04:05Z", "2024-01-02", "2023-12-31T23:59:59.999999999+01:00", "not-a-time",
			json.Number("20240102"))
	})
	maybe(pickAny("meta", "Meta", "META").(string), func() any {
		return map[string]any{
			pickAny("Owner", "owner", "OWNER").(string): pickAny("Bob", "bob", "BOB", "bobby", nil),
			"level": json.Number(fmt.Sprint(r.IntN(5))),
			"tags":  []any{"x", map[string]any{"owner": "nested-bob"}},
		}
	})
	maybe("items", func() any {
		return []any{
			map[string]any{"sku": "A1", "qty": json.Number("2")},
			map[string]any{"sku": pickAny("b2", "B2", "c3"), "qty": "3"},
			[]any{map[string]any{"sku": "nested"}},
		}
	})
	maybe("flag", func() any { return pickAny(true, false, "TRUE") })
	maybe("nothing", func() any { return nil })
	maybe("k\u212Aey", func() any { return "kelvin key" })
	maybe("Straße", func() any { return "street" })
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	return ptr(string(b))
}

// equivalenceCases are realistic queries and the edges of each rule. exact
// is whether Build must push the whole query down; it documents what is
// pushed and fails if pushdown silently regresses.
var equivalenceCases = []struct {
	query string
	exact bool
}{
	// anchors, every scope, case and globs
	{"path:Acme", true},
	{"path:acme/DOCS", true},
	{"path:Acme/Docs scope:children", true},
	{"namespace:acme/docs", true},
	{"namespace:Acme/Docs scope:descendants", true},
	{"namespace:Acme scope:subtree", true},
	{"path:Acme/Docs scope:subtree", true},
	{"path:acme/docs/reports/x1 scope:ancestors", true},
	{"path:Acme/Docs/Reports scope:hierarchy", true},
	{"path:Acme/*/Reports scope:children", true},
	{"path:*/docs scope:descendants", true},
	{"path:Acme/D* scope:subtree", true},
	{"path:acme/*/x1 scope:ancestors", true},
	{"path:* scope:descendants", true},
	{"path:a* scope:ancestors", true},
	{"path:*docs* scope:hierarchy", true},
	{"path:* scope:exact", true},
	{"scope:children", true},
	{"scope:descendants", true},
	{"scope:ancestors", true},
	{"scope:hierarchy", true},
	{"[Acme/Docs, beta/docs2] scope:subtree", true},
	{"[acme/docs]", true},
	{"[Acme/Docs/Reports, Gamma/notes/x1] scope:ancestors", true},
	{"path:Acme/Docs|Gamma scope:children", true},
	{"path:Acme/50% scope:subtree", true},
	{"path:acme/x_y scope:subtree", true},
	{`path:"Acme/back\\slash" scope:subtree`, true},
	{"path:acme/kelvinkey scope:subtree", true},
	{"path:\"acme/kelvin\u212Aey\" scope:subtree", true},
	{"path:Acme/İstanbul scope:descendants", true},
	{"path:acme/istanbul scope:subtree", true},
	{"path:acme/ΣΊΣΥΦΟΣ scope:subtree", true},
	{"path:acme/a*b scope:subtree", true},
	{"path:acme/docs/_Access scope:children", true},
	{"path:*/_Access scope:children", true},
	// text fields: strings and globs are exact
	{"nodeType:Article", true},
	{"nodeType:article|page", true},
	{"-nodeType:Article", true},
	{"nodeType:(Article OR Report)", true},
	{"-nodeType:Article|Page", true},
	{"nodeType:", true},
	{"-nodeType:", true},
	{"name:alpha", true},
	{"name:*alpha*", true},
	{"name:*100%*", true},
	{"name:under_score", true},
	{"name:*_*", true},
	{`name:"back\\slash"`, true},
	{`name:*\*`, true},
	{"name:kelvin", true},
	{"name:\u212Aelvin", true},
	{"name:STRASSE", true},
	{"name:straße", true},
	{"name:izmir", true},
	{"name:İzmir", true},
	{"name:σίσυφος", true},
	{"-name:alpha", true},
	{"-name:*a*", true},
	{"name:*report", true},
	{"name:a*", true},
	{`name:"ALPHA report"`, true},
	{"name:*line*", true},
	{"name:multi*line", true},
	{`name:"star*name"`, true},
	{"name:", true},
	{"id:x1", true},
	{"id:*1", true},
	{"-id:*1*", true},
	{"namespace:Acme|beta", true},
	{"-namespace:Acme/Docs", true},
	{"mainNode:Acme/Docs", true},
	{"mainNode:*docs*", true},
	{"-mainNode:acme", true},
	// text fields with numbers or times: typed per row, left to Go
	{"name:42", false},
	{"name:4.2e1|alpha", false},
	{"name:2024-03-01", false},
	{"-name:42", false},
	{"id:42", false},
	{"nodeType:2024-01-05", false},
	{"name:>m", false},
	{"name:<=Alpha", false},
	{"nodeType:>=P", false},
	// state: every operator
	{"state:active", true},
	{"-state:deleted", true},
	{"state:new|rejected", true},
	{"state:>n", true},
	{"state:<=new", true},
	{"state:*e*", true},
	{"state:ACTIVE", true},
	// version: numbers, floats, strings, globs
	{"version:3", true},
	{"version:>5", true},
	{"version:<=2", true},
	{"version:>=1e1", true},
	{"version:2.0", true},
	{"version:>2.5", true},
	{"version:9007199254740993", true},
	{"version:9007199254740992.0", true},
	{"version:>9007199254740992.5", true},
	{"version:*1*", true},
	{"-version:3", true},
	{"version:3|5|7", true},
	{"version:>abc", true},
	{"version:<-1", true},
	{"version:abc", true},
	{"version:>1e400", true},
	{"version:<-1e400", true},
	// lastModified: instants within years 0000-9999, text outside
	{"lastModified:>2024-02-01", true},
	{"lastModified:<2024-01-15T12:00:00Z", true},
	{"lastModified:>=2024-01-10T00:00:00.0000005Z", true},
	{"lastModified:<=2024-01-10T00:00:00.0000005Z", true},
	{"lastModified:>2024-01-10T00:00:00.0000005Z", true},
	{"lastModified:<2024-01-10T00:00:00.0000015Z", true},
	{"lastModified:2024-01-05T03:04:05Z", true},
	{"lastModified:2024-01-05T04:04:05+01:00", true},
	{"lastModified:2024-01-10T00:00:00.0000005Z", true},
	{"lastModified:2024-01-10", true},
	{"lastModified:2024*", true},
	{"lastModified:*z", true},
	{"lastModified:>9999", true},
	{"lastModified:<0001", true},
	{"lastModified:<0000-12-31", true},
	{"lastModified:>9999-12-31T23:59:59Z", true},
	{"-lastModified:>2024-02-01", true},
	{"lastModified:>10000-01-01", true},
	{"lastModified:>-0004", true},
	{"lastModified:\"12000-01-01T00:00:00Z\"", true},
	// content properties
	{"content.title:alpha", true},
	{"content.Title:Alpha", true},
	{"content.title:*report*", true},
	{"-content.title:alpha", true},
	{"content.meta.owner:bob", true},
	{"content.META.OWNER:BOB", true},
	{"content.meta.owner:*bob*", true},
	{"-content.meta.owner:bob", true},
	{"content.tags:b", true},
	{"content.tags:nested", true},
	{"content.tags:deep", true},
	{"content.tags:v", true},
	{"content.tags.k:v", true},
	{"content.items.sku:a1", true},
	{"content.items.sku:nested", true},
	{"content.flag:true", true},
	{"-content.flag:true", true},
	{"content.nothing:*", true},
	{"content.missing:x", true},
	{"-content.missing:x", true},
	{"content.KKEY:kelvin*", true},
	{"content.STRASSE:street", true},
	{"content.title:\"lower key\"", true},
	{"content.items.qty:2", false},
	{"content.count:>5", false},
	{"content.count:7", false},
	{"-content.count:7", false},
	{"content.price:1.5", false},
	{"content.createdAt:>2024-01-01", false},
	{"content.createdAt:2024-01-02", false},
	// combinations
	{"nodeType:Article state:active", true},
	{"nodeType:Article OR name:*alpha*", true},
	{"(nodeType:Article OR nodeType:Page) -state:deleted", true},
	{"namespace:Acme/Docs nodeType:Article sort:version-desc limit:5", true},
	{"path:acme scope:descendants (content.title:*a* OR version:>10) -nodeType:page sort:lastModified-desc limit:12", true},
	{"nodeType:Article OR name:42", false},
	{"-name:42 nodeType:Article", false},
	{"(name:alpha OR name:42) nodeType:Article", false},
	{"(version:>3 OR name:>m) state:active", false},
	// globs with more stars than maxGlobStars are matched in Go
	{"name:" + strings.Repeat("*", 16) + "a", true},
	{"name:" + strings.Repeat("*", 17) + "a", false},
	{"-name:" + strings.Repeat("*", 17) + "a", false},
	{"path:acme/" + strings.Repeat("*", 17) + " scope:subtree", false},
	{"version:" + strings.Repeat("*", 17) + "1", false},
	{"lastModified:" + strings.Repeat("*", 17) + "z", false},
	// free text
	{"alpha", false},
	{"report nodeType:Article", false},
	// sorting and limits
	{"sort:version", true},
	{"sort:version-desc limit:7", true},
	{"sort:lastModified", true},
	{"sort:lastModified-desc limit:10", true},
	{"sort:state limit:4", true},
	{"sort:state-desc", true},
	{"sort:path", true},
	{"limit:3", true},
	{"limit:all", true},
	{"nodeType:Article limit:1", true},
	{"sort:name", false},
	{"sort:path-desc limit:5", false},
	{"sort:content.count limit:5", false},
	{"sort:nodeType-desc", false},
	{"name:*a* sort:name limit:3", false},
}

// programmaticCases are queries Parse does not produce but a caller can
// build: fields and sorts mesh spells differently, and the raw content.
var programmaticCases = []struct {
	name  string
	q     *mesh.Query
	exact bool
}{
	{"path field", &mesh.Query{Filter: mesh.Cond{Field: "path", Op: mesh.OpLike, Values: []string{"acme/*/x1"}}}, true},
	{"negated path field", &mesh.Query{Filter: mesh.Cond{Field: "path", Op: mesh.OpNotIn, Values: []string{"acme", "beta/docs"}}}, true},
	{"unread field", &mesh.Query{Filter: mesh.Cond{Field: "Name", Op: mesh.OpEq, Values: []string{"alpha"}}}, true},
	{"negated unread field", &mesh.Query{Filter: mesh.Cond{Field: "bogus", Op: mesh.OpNe, Values: []string{"x"}}}, true},
	{"comparison on unread field", &mesh.Query{Filter: mesh.Cond{Field: "bogus", Op: mesh.OpGt, Values: []string{"x"}}}, true},
	{"raw content", &mesh.Query{Filter: mesh.Cond{Field: "content", Op: mesh.OpLike, Values: []string{"*alpha*"}}}, false},
	{"negated raw content", &mesh.Query{Filter: mesh.Cond{Field: "content", Op: mesh.OpNotLike, Values: []string{"*alpha*"}}}, false},
	{"sort by unread field", &mesh.Query{Sort: mesh.Sort{Field: "bogus", Desc: true}, Limit: 9}, true},
	{"sort by path ascending, spelled out", &mesh.Query{Sort: mesh.Sort{Field: "path"}, Limit: 9}, false},
	{"descending flag without a field", &mesh.Query{Sort: mesh.Sort{Desc: true}, Limit: 9}, true},
	{"empty content property", &mesh.Query{Filter: mesh.Cond{Field: "content.", Op: mesh.OpEq, Values: []string{"x"}}}, true},
	{"unknown scope", &mesh.Query{Path: "acme", Scope: mesh.Scope(42)}, true},
	{"paths with the path ignored", &mesh.Query{Path: "gamma", Paths: []string{"acme/docs"}, Scope: mesh.ScopeChildren}, true},
}

// target is one read: a table in some schemas.
type target struct {
	table   string
	schemas []string
}

var equivalenceTargets = []target{
	{mesh.NodesTable, []string{"acme"}},
	{mesh.NodesTable, []string{"acme", "beta", "gamma"}},
	{"access", []string{"acme", "beta", "gamma"}},
	{"notifications", []string{"beta"}},
}

// loadTestMesh creates the schemas, inserts the generated rows and returns
// the nodes as read back, by table and schema.
func loadTestMesh(ctx context.Context, t *testing.T, db *pgxpool.Pool) map[string]map[string][]mesh.Node {
	return loadTestMeshKeyed(ctx, t, db, func(int) bool { return true })
}

// loadTestMeshKeyed is loadTestMesh with the folded keys of row i filled
// only when keyed(i) holds.
func loadTestMeshKeyed(ctx context.Context, t *testing.T, db *pgxpool.Pool, keyed func(int) bool) map[string]map[string][]mesh.Node {
	t.Helper()
	m := generateMesh(t, 20261130)
	for _, p := range testPartitions {
		createTables(ctx, t, db, strings.ToLower(p), Tables()...)
	}
	insertRowsKeyed(ctx, t, db, m.rows, keyed)
	stored := map[string]map[string][]mesh.Node{}
	for _, table := range Tables() {
		stored[table] = map[string][]mesh.Node{}
		for _, p := range testPartitions {
			s := strings.ToLower(p)
			stored[table][s] = readAll(ctx, t, db, s, table)
		}
	}
	for _, p := range testPartitions {
		s := strings.ToLower(p)
		require.Len(t, stored[mesh.NodesTable][s], 70, "nodes of %s", s)
		require.NotEmpty(t, stored["access"][s], "access satellites of %s", s)
		require.NotEmpty(t, stored["notifications"][s], "notification satellites of %s", s)
	}
	return stored
}

// reference is what mesh answers: every node filtered by Matches, sorted
// by Less, cut to the limit.
func reference(q *mesh.Query, nodes []mesh.Node) []mesh.Node {
	var out []mesh.Node
	for _, n := range nodes {
		if q.Matches(n) {
			out = append(out, n)
		}
	}
	return finish(q, out)
}

func finish(q *mesh.Query, nodes []mesh.Node) []mesh.Node {
	slices.SortStableFunc(nodes, func(a, b mesh.Node) int {
		switch {
		case q.Less(a, b):
			return -1
		case q.Less(b, a):
			return 1
		}
		return 0
	})
	if q.Limit > 0 && len(nodes) > q.Limit {
		nodes = nodes[:q.Limit]
	}
	return nodes
}

func TestEveryQueryReadsTheNodesMatchesAndLessSelectWhetherPushedDownOrFilteredAfter(t *testing.T) {
	t.Run("keys folded", func(t *testing.T) {
		ctx, db := openDB(t)
		checkEquivalence(ctx, t, db, loadTestMesh(ctx, t, db))
	})
	// During the backfill some rows have no keys yet: the spelled-out
	// pattern answers for them, and the answer is the same.
	t.Run("half the keys not yet backfilled", func(t *testing.T) {
		ctx, db := openDB(t)
		checkEquivalence(ctx, t, db, loadTestMeshKeyed(ctx, t, db, func(i int) bool { return i%2 == 0 }))
	})
}

func checkEquivalence(ctx context.Context, t *testing.T, db *pgxpool.Pool, stored map[string]map[string][]mesh.Node) {

	exactCount, nonEmpty := 0, 0
	type namedQuery struct {
		query string
		q     *mesh.Query
		exact bool
	}
	var cases []namedQuery
	for _, tc := range equivalenceCases {
		q, err := mesh.Parse(tc.query)
		require.NoError(t, err, tc.query)
		cases = append(cases, namedQuery{tc.query, q, tc.exact})
	}
	for _, pc := range programmaticCases {
		cases = append(cases, namedQuery{pc.name, pc.q, pc.exact})
	}
	for _, tc := range cases {
		q := tc.q
		for _, tg := range equivalenceTargets {
			var universe []mesh.Node
			for _, s := range tg.schemas {
				universe = append(universe, stored[tg.table][s]...)
			}
			want := reference(q, universe)

			sel, err := Build(q, tg.table, tg.schemas)
			require.NoError(t, err, tc.query)
			require.Equal(t, tc.exact, sel.Exact, "%s: Exact (residual: %q)\n%s", tc.query, sel.Residual, sel.SQL)
			if sel.Exact {
				require.Empty(t, sel.Residual, tc.query)
			} else {
				require.NotEmpty(t, sel.Residual, "%s: an inexact statement says what it left to Go", tc.query)
			}
			got, err := query(ctx, db, sel.SQL, sel.Args...)
			require.NoError(t, err, "%s\n%s", tc.query, sel.SQL)

			var answer []mesh.Node
			if sel.Exact {
				// The rows are the answer as they come: no filtering, no
				// sorting, no cutting in Go.
				answer = got
			} else {
				for _, n := range got {
					if q.Matches(n) {
						answer = append(answer, n)
					}
				}
				answer = finish(q, answer)
			}
			require.Equal(t, paths(want), paths(answer), "%s on %s %v\n%s\nargs %q", tc.query, tg.table, tg.schemas, sel.SQL, sel.Args)
			assert.Equal(t, want, answer, "%s: the nodes themselves", tc.query)
			if sel.Exact {
				exactCount++
			}
			if len(want) > 0 && len(want) < len(universe) {
				nonEmpty++
			}
		}
	}
	// The data must make the queries discriminate: most select some rows
	// but not all of them, so an empty or unfiltered answer would fail.
	assert.Greater(t, nonEmpty, len(cases)*len(equivalenceTargets)/2)
	t.Logf("%d queries x %d targets; %d statements exact; %d answers neither empty nor everything",
		len(cases), len(equivalenceTargets), exactCount, nonEmpty)
}

// Negative controls: the obvious translations get this data wrong, so the
// equivalence test above would catch them.
func TestNaiveTranslationsDisagreeWithMeshOnTheTestData(t *testing.T) {
	ctx, db := openDB(t)
	stored := loadTestMesh(ctx, t, db)
	all := slices.Concat(stored[mesh.NodesTable]["acme"], stored[mesh.NodesTable]["beta"], stored[mesh.NodesTable]["gamma"])
	union := "(SELECT " + Columns + " FROM acme.mesh_nodes UNION ALL SELECT " + Columns +
		" FROM beta.mesh_nodes UNION ALL SELECT " + Columns + " FROM gamma.mesh_nodes) AS n"

	controls := []struct {
		name, query, naive string
		args               []any
	}{
		{"case-sensitive equality", "name:alpha", "SELECT * FROM " + union + " WHERE name = $1 ORDER BY path COLLATE \"C\"", []any{"alpha"}},
		{"unescaped LIKE", "name:*100%*", "SELECT * FROM " + union + " WHERE name ILIKE $1 ORDER BY path COLLATE \"C\"", []any{"%100%%"}},
		{"content path without arrays or key folding", "content.meta.owner:bob",
			"SELECT * FROM " + union + " WHERE content #>> '{meta,owner}' ILIKE $1 ORDER BY path COLLATE \"C\"", []any{"bob"}},
		{"timestamp order for every year", "sort:lastModified-desc",
			"SELECT * FROM " + union + " ORDER BY last_modified DESC, path COLLATE \"C\"", nil},
		{"float comparison of versions", "version:9007199254740993",
			"SELECT * FROM " + union + " WHERE version::float8 = $1 ORDER BY path COLLATE \"C\"", []any{float64(1<<53 + 1)}},
	}
	var lowerFolds bool
	require.NoError(t, db.QueryRow(ctx, "SELECT lower(E'\\u212A') = 'k'").Scan(&lowerFolds))
	if !lowerFolds {
		// Under the C locale PostgreSQL's lower() leaves the Kelvin sign be.
		controls = append(controls, struct {
			name, query, naive string
			args               []any
		}{"lower() of the server's locale", "name:kelvin",
			"SELECT * FROM " + union + " WHERE lower(name) = lower($1) ORDER BY path COLLATE \"C\"", []any{"kelvin"}})
	}
	for _, c := range controls {
		q, err := mesh.Parse(c.query)
		require.NoError(t, err)
		naive, err := query(ctx, db, c.naive, c.args...)
		require.NoError(t, err, c.naive)
		assert.NotEqual(t, paths(reference(q, all)), paths(naive), "%s: the data does not tell it from mesh", c.name)

		sel, err := Build(q, mesh.NodesTable, []string{"acme", "beta", "gamma"})
		require.NoError(t, err)
		require.True(t, sel.Exact, c.query)
		got, err := query(ctx, db, sel.SQL, sel.Args...)
		require.NoError(t, err)
		assert.Equal(t, paths(reference(q, all)), paths(got), "%s: Build's statement", c.name)
	}
}
