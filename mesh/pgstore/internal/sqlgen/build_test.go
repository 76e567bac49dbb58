package sqlgen

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

func mustParse(t testing.TB, s string) *mesh.Query {
	t.Helper()
	q, err := mesh.Parse(s)
	require.NoError(t, err, s)
	return q
}

// shapeQueries cover every kind of fragment Build writes, including the
// content walk (whose own recursion must not read as a fan-out).
var shapeQueries = []string{
	"",
	"nodeType:Article",
	"namespace:Acme/Docs content.meta.owner:bob sort:lastModified-desc limit:5",
	"path:acme scope:hierarchy -state:deleted version:>3 sort:state",
	"name:42 sort:name",
}

func TestAFanOutOverNSchemasIsOneStatementWithNMinusOneUnionAlls(t *testing.T) {
	for _, s := range shapeQueries {
		for n := 2; n <= 6; n++ {
			schemas := make([]string, n)
			for i := range schemas {
				schemas[i] = fmt.Sprintf("p%d", i)
			}
			sel, err := Build(mustParse(t, s), mesh.NodesTable, schemas)
			require.NoError(t, err)
			checkStatement(t, sel)
			k := branchesPerTable(sel)
			assert.Equal(t, n*k-1, strings.Count(sel.SQL, "UNION ALL"), "%q over %d schemas", s, n)
			assert.True(t, strings.HasPrefix(sel.SQL, "SELECT * FROM (SELECT "+Columns+" FROM "))
			assert.Contains(t, sel.SQL, ") AS combined")
			for _, schema := range schemas {
				ident := pgx.Identifier{schema, mesh.NodesTable}.Sanitize()
				require.Equal(t, k, strings.Count(sel.SQL, ident), "%s named once per branch", ident)
			}
			// The branches are identical but for the schema: a statement per
			// schema, or branches filtered differently, would not be.
			first, _, _ := strings.Cut(sel.SQL[len("SELECT * FROM ("):], " UNION ALL ")
			want := strings.Replace(first, pgx.Identifier{schemas[0], mesh.NodesTable}.Sanitize(), "<schema>", 1)
			for _, schema := range schemas[1:] {
				ident := pgx.Identifier{schema, mesh.NodesTable}.Sanitize()
				i := strings.Index(sel.SQL, " UNION ALL SELECT "+Columns+" FROM "+ident)
				require.GreaterOrEqual(t, i, 0)
				rest := sel.SQL[i+len(" UNION ALL "):]
				branch, _, _ := strings.Cut(rest, " UNION ALL ")
				branch, _, _ = strings.Cut(branch, ") AS combined")
				assert.Equal(t, want, strings.Replace(branch, ident, "<schema>", 1), "branch of %s", schema)
			}
		}
	}
}

// branchesPerTable is 2 when the statement reads each table in a branch
// for rows with folded keys and one for rows without, else 1.
func branchesPerTable(sel Select) int {
	if strings.Contains(sel.SQL, "WHERE n.path_key IS NULL AND ") {
		return 2
	}
	return 1
}

func TestAPinnedQueryNamesExactlyOneSchemaAndHasNoUnionAcrossTables(t *testing.T) {
	split := 0
	for _, s := range shapeQueries {
		sel, err := Build(mustParse(t, s), "access", []string{"acme"})
		require.NoError(t, err)
		checkStatement(t, sel)
		k := branchesPerTable(sel)
		assert.Equal(t, k-1, strings.Count(sel.SQL, "UNION ALL"), s)
		assert.Equal(t, k, strings.Count(sel.SQL, " FROM \""), "%q reads one table", s)
		assert.Equal(t, k, strings.Count(sel.SQL, ` FROM "acme"."access" AS n`), sel.SQL)
		if k == 1 {
			assert.NotContains(t, sel.SQL, "combined", s)
			assert.True(t, strings.HasPrefix(sel.SQL, `SELECT `+Columns+` FROM "acme"."access" AS n`), sel.SQL)
			continue
		}
		split++
		assert.True(t, strings.HasPrefix(sel.SQL, `SELECT * FROM (SELECT `+Columns+` FROM "acme"."access" AS n WHERE n.path_key IS NOT NULL AND `), sel.SQL)
	}
	assert.Positive(t, split, "conditions on node fields read rows with keys and rows without in two branches")
}

func TestOrderAndLimitAreInTheStatementOnlyWhenItIsExact(t *testing.T) {
	exact, err := Build(mustParse(t, "nodeType:Article sort:version-desc limit:5"), mesh.NodesTable, []string{"a", "b"})
	require.NoError(t, err)
	require.True(t, exact.Exact)
	assert.True(t, strings.HasSuffix(exact.SQL, `) AS combined ORDER BY version DESC, path COLLATE "C" LIMIT $`+
		strconv.Itoa(len(exact.Args))+`::int8`), exact.SQL)

	// Negative control: the same query sorted by a text field cannot be
	// ordered in SQL, so neither order nor limit may be, or rows beyond the
	// SQL limit that sort first in Go would be lost.
	loose, err := Build(mustParse(t, "nodeType:Article sort:name-desc limit:5"), mesh.NodesTable, []string{"a", "b"})
	require.NoError(t, err)
	require.False(t, loose.Exact)
	assert.NotContains(t, loose.SQL, "ORDER BY")
	assert.NotContains(t, loose.SQL, "LIMIT")
	assert.NotEmpty(t, loose.Residual)
}

func TestBadInputIsRefusedWithAnInputError(t *testing.T) {
	deep := mesh.Expr(mesh.Cond{Field: "name", Op: mesh.OpEq, Values: []string{"x"}})
	for range maxExprDepth + 1 {
		deep = mesh.And{deep}
	}
	cases := []struct {
		name    string
		q       *mesh.Query
		table   string
		schemas []string
		input   string
	}{
		{"nil query", nil, mesh.NodesTable, []string{"a"}, "query"},
		{"unknown table", &mesh.Query{}, "pg_authid", []string{"a"}, "table"},
		{"table with SQL in it", &mesh.Query{}, `mesh_nodes"; DROP TABLE x; --`, []string{"a"}, "table"},
		{"no schemas", &mesh.Query{}, mesh.NodesTable, nil, "schema"},
		{"empty schema", &mesh.Query{}, mesh.NodesTable, []string{"a", ""}, "schema"},
		{"NUL in schema", &mesh.Query{}, mesh.NodesTable, []string{"a\x00b"}, "schema"},
		{"schema not UTF-8", &mesh.Query{}, mesh.NodesTable, []string{"a\xffb"}, "schema"},
		{"schema PostgreSQL would truncate", &mesh.Query{}, mesh.NodesTable, []string{strings.Repeat("s", 64)}, "schema"},
		{"schema listed twice", &mesh.Query{}, mesh.NodesTable, []string{"a", "b", "a"}, "schema"},
		{"NUL in a value", &mesh.Query{Filter: mesh.Cond{Field: "name", Op: mesh.OpEq, Values: []string{"a\x00"}}},
			mesh.NodesTable, []string{"a"}, "query"},
		{"value not UTF-8", &mesh.Query{Filter: mesh.Or{mesh.Cond{Field: "name", Op: mesh.OpIn, Values: []string{"ok", "\xc3"}}}},
			mesh.NodesTable, []string{"a"}, "query"},
		{"NUL in a field", &mesh.Query{Filter: mesh.Cond{Field: "content.a\x00", Op: mesh.OpEq, Values: []string{"a"}}},
			mesh.NodesTable, []string{"a"}, "query"},
		{"NUL in the path", &mesh.Query{Path: "a\x00", Scope: mesh.ScopeChildren}, mesh.NodesTable, []string{"a"}, "query"},
		{"NUL in a listed path", &mesh.Query{Paths: []string{"a", "b\x00"}}, mesh.NodesTable, []string{"a"}, "query"},
		{"filter nested too deep", &mesh.Query{Filter: deep}, mesh.NodesTable, []string{"a"}, "query"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Build(c.q, c.table, c.schemas)
			var ie *InputError
			require.True(t, errors.As(err, &ie), "got %v", err)
			assert.Equal(t, c.input, ie.Input)
			assert.NotEmpty(t, ie.Reason)
			assert.Contains(t, err.Error(), "sqlgen: "+c.input)
		})
	}
	// Negative control: the limits are where they say, not tighter.
	_, err := Build(&mesh.Query{}, mesh.NodesTable, []string{strings.Repeat("s", MaxSchemaNameLen), "Ünïcode; \"odd\""})
	assert.NoError(t, err)
	_, err = Build(&mesh.Query{Filter: deep.(mesh.And)[0]}, mesh.NodesTable, []string{"a"})
	assert.NoError(t, err)
}

func TestConditionsMeshEvaluatesAsFalseAreFalseInSQL(t *testing.T) {
	// mesh evaluates a nil term, a *Cond, an unknown operator and a field
	// it never reads as false; Build must not error or widen them.
	for _, e := range []mesh.Expr{
		mesh.And{nil},
		&mesh.Cond{Field: "name", Op: mesh.OpEq, Values: []string{"x"}},
		mesh.Cond{Field: "name", Op: mesh.Op(99), Values: []string{"x"}},
		mesh.Cond{Field: "Name", Op: mesh.OpEq, Values: []string{"x"}},
		mesh.Or{},
		mesh.Cond{Field: "name", Op: mesh.OpIn},
	} {
		q := &mesh.Query{Filter: e}
		require.False(t, q.Matches(mesh.Node{ID: "x", Path: "x", Name: "x"}), "%#v", e)
		sel, err := Build(q, mesh.NodesTable, []string{"a"})
		require.NoError(t, err)
		assert.True(t, sel.Exact)
		assert.Contains(t, sel.SQL, " WHERE FALSE ", "%#v", e)
	}
}

// checkStatement checks that sel is one well-formed statement: quotes and
// parentheses balance, nothing follows a semicolon, and its parameters are
// exactly $1..$len(Args).
func checkStatement(t testing.TB, sel Select) {
	t.Helper()
	require.NotContains(t, sel.SQL, "\x00")
	depth, used := 0, map[int]bool{}
	s := sel.SQL
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"':
			end := i + 1
			for {
				j := strings.IndexByte(s[end:], c)
				require.GreaterOrEqual(t, j, 0, "unclosed %c at %d in %s", c, i, s)
				end += j
				if end+1 < len(s) && s[end+1] == c {
					end += 2 // a doubled quote is part of the token
					continue
				}
				break
			}
			i = end
		case '(':
			depth++
		case ')':
			depth--
			require.GreaterOrEqual(t, depth, 0, "unbalanced ) at %d in %s", i, s)
		case ';':
			require.Fail(t, "a second statement", "; at %d in %s", i, s)
		case '$':
			j := i + 1
			for j < len(s) && '0' <= s[j] && s[j] <= '9' {
				j++
			}
			n, err := strconv.Atoi(s[i+1 : j])
			require.NoError(t, err, "$ at %d in %s", i, s)
			require.True(t, n >= 1 && n <= len(sel.Args), "$%d with %d args", n, len(sel.Args))
			used[n] = true
			i = j - 1
		}
	}
	require.Zero(t, depth, "unbalanced ( in %s", s)
	require.Len(t, used, len(sel.Args), "every argument is referenced: %s", s)
}

func TestSeveralTablesAreOneStatementWithABranchPerSchemaAndTable(t *testing.T) {
	q, err := mesh.Parse("path:acme scope:descendants nodeType:Article")
	require.NoError(t, err)
	sel, err := BuildTables(q, []string{"mesh_nodes", "access"}, []string{"acme", "beta"})
	require.NoError(t, err)
	assert.Equal(t, 4*2-1, strings.Count(sel.SQL, "UNION ALL"), "two branches (rows with keys, rows without) per schema and table")
	for _, from := range []string{`"acme"."mesh_nodes"`, `"acme"."access"`, `"beta"."mesh_nodes"`, `"beta"."access"`} {
		assert.Contains(t, sel.SQL, from)
	}
	_, err = BuildTables(q, []string{"mesh_nodes", "mesh_nodes"}, []string{"acme"})
	assert.Error(t, err, "a table listed twice")
	_, err = BuildTables(q, nil, []string{"acme"})
	assert.Error(t, err, "no table")
}
