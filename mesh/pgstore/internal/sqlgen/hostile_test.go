package sqlgen

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

var hostileSchemas = []string{
	`a"b`,
	`x; DROP TABLE public.victim; --`,
	`"; DROP TABLE public.victim; --`,
	`back\slash`,
	`it's`,
	`$1`,
	`Upper Case`,
}

var hostileValues = []string{
	`'; DROP TABLE public.victim; --`,
	`"); DROP TABLE public.victim; --`,
	`\'; SELECT pg_sleep(10); --`,
	`$1`,
	`%_\`,
	`{a,b}`,
	`*/ DROP TABLE public.victim /*`,
}

// catalog returns every relation and schema name in the database: what an
// escaped value could change.
func catalog(ctx context.Context, t *testing.T, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) string {
	t.Helper()
	var s string
	require.NoError(t, db.QueryRow(ctx, `SELECT coalesce(string_agg(n.nspname || '.' || c.relname, E'\n' ORDER BY 1), '')
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')`).Scan(&s))
	return s
}

func TestHostileSchemaNamesAndValuesStayDataAndLeaveTheCatalogUnchanged(t *testing.T) {
	ctx, db := openDB(t)
	_, err := db.Exec(ctx, "CREATE TABLE public.victim (x int); INSERT INTO public.victim VALUES (1)")
	require.NoError(t, err)
	var rows []row
	for _, s := range hostileSchemas {
		createTables(ctx, t, db, s, mesh.NodesTable)
		for i, v := range hostileValues {
			rows = append(rows, row{schema: s, table: mesh.NodesTable, namespace: s, id: "n" + string(rune('a'+i)),
				name: ptr(v), content: ptr(`{"title": ` + jsonString(v) + `}`), modified: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)})
		}
	}
	insertRows(ctx, t, db, rows)
	before := catalog(ctx, t, db)
	require.Contains(t, before, "public.victim")

	for _, v := range hostileValues {
		for _, q := range []*mesh.Query{
			{Filter: mesh.Cond{Field: "name", Op: mesh.OpEq, Values: []string{v}}},
			{Filter: mesh.Cond{Field: "content.title", Op: mesh.OpIn, Values: []string{"zzz", v}}},
			{Filter: mesh.Cond{Field: "content." + v, Op: mesh.OpNe, Values: []string{v}}, Sort: mesh.Sort{Field: "version"}},
			{Filter: mesh.Cond{Field: "lastModified", Op: mesh.OpGt, Values: []string{v}}},
			{Filter: mesh.Cond{Field: "name", Op: mesh.OpLt, Values: []string{v}}, Path: v, Scope: mesh.ScopeAncestors},
			{Paths: []string{v, v + "/x"}, Scope: mesh.ScopeSubtree, Filter: mesh.Cond{Field: "name", Op: mesh.OpLike, Values: []string{"*" + v}}},
		} {
			sel, err := Build(q, mesh.NodesTable, hostileSchemas)
			require.NoError(t, err)
			checkStatement(t, sel)
			text := sel.SQL
			for _, s := range hostileSchemas {
				text = strings.ReplaceAll(text, pgx.Identifier{s, mesh.NodesTable}.Sanitize(), "<table>")
			}
			// ($1 itself is also how the statement names its arguments.)
			if v != "$1" {
				assert.NotContains(t, text, v, "the value is an argument, not SQL")
			}
			for _, s := range hostileSchemas {
				if s != "$1" {
					assert.NotContains(t, text, s, "a schema name appears only as a quoted identifier")
				}
			}
			got, err := query(ctx, db, sel.SQL, sel.Args...)
			require.NoError(t, err, sel.SQL)
			if q.Paths == nil && q.Path == "" && q.Filter.(mesh.Cond).Field == "name" && q.Filter.(mesh.Cond).Op == mesh.OpEq {
				// The value went through as data: exactly the row holding it,
				// in every schema.
				assert.Len(t, got, len(hostileSchemas), "rows named %q", v)
			}
		}
	}
	assert.Equal(t, before, catalog(ctx, t, db), "no statement changed the catalog")

	// Negative control: the same value concatenated into SQL does change
	// the catalog (inside a transaction that is rolled back), so the check
	// above would have caught an escape.
	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, tx.Rollback(ctx)) }()
	naive := "SELECT 1 FROM " + pgx.Identifier{hostileSchemas[0], mesh.NodesTable}.Sanitize() +
		" WHERE name = '" + hostileValues[0] + "'"
	_, err = tx.Exec(ctx, naive, pgx.QueryExecModeSimpleProtocol)
	require.NoError(t, err)
	assert.NotEqual(t, before, catalog(ctx, t, tx), "concatenation escapes")
}

func TestANULInASchemaNameIsRefusedNotStripped(t *testing.T) {
	// pgx.Identifier.Sanitize drops NUL, which would silently read a
	// different schema ("ab" for "a\x00b"); Build refuses instead.
	_, err := Build(&mesh.Query{}, mesh.NodesTable, []string{"a\x00b"})
	var ie *InputError
	require.True(t, errors.As(err, &ie))
	assert.Equal(t, "schema", ie.Input)
	// Negative control: what Sanitize alone would have produced.
	assert.Equal(t, `"ab"`, pgx.Identifier{"a\x00b"}.Sanitize())
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
