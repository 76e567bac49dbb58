package pgstore

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// schemasNamed returns which of schemas a statement names as a quoted
// identifier.
func schemasNamed(sql string, schemas ...string) []string {
	var named []string
	for _, s := range schemas {
		if strings.Contains(sql, pgx.Identifier{s}.Sanitize()+".") {
			named = append(named, s)
		}
	}
	return named
}

func TestAPinnedQueryReadsOneSchemaAndAFanOutIsOneUnionAll(t *testing.T) {
	t.Parallel()
	trace := &statements{}
	logs := newLogLines()
	s := openStore(t, pg.Database(t), Options{QueryTracer: trace, Logger: slog.New(logs)})
	parts := []string{"alpha", "beta", "gamma"}
	for _, p := range parts {
		put(t, s, mesh.Node{Path: p + "/Docs/a", NodeType: "Article"})
	}
	trace.take()

	pinned := initialOf(t, s, "namespace:alpha/Docs")
	assert.Equal(t, []string{"alpha/Docs/a"}, pathsOf(pinned.Items))
	assert.Equal(t, []string{"alpha"}, pinned.Partitions)
	sql := trace.take()
	require.Len(t, sql, 1, "a pinned read is one statement: %q", sql)
	assert.Equal(t, []string{"alpha"}, schemasNamed(sql[0], parts...), "it reads its own schema only: %s", sql[0])
	assert.Equal(t, 2, strings.Count(sql[0], `FROM "alpha"."mesh_nodes"`), "one table: its rows with folded keys and its rows without: %s", sql[0])
	assert.Empty(t, logs.matching("pgstore: fan-out read"), "a pinned read is not a fan-out")

	// Control: reading the three partitions pinned takes three statements,
	// which is what a fan-out done as a loop of per-schema reads would show.
	for _, p := range parts {
		initialOf(t, s, "namespace:"+p+"/Docs")
	}
	assert.Len(t, trace.take(), 3)

	all := initialOf(t, s, "nodeType:Article partitions:all")
	assert.Equal(t, []string{"alpha/Docs/a", "beta/Docs/a", "gamma/Docs/a"}, pathsOf(all.Items))
	assert.Equal(t, parts, all.Partitions, "the frame names the schemas read")
	sql = trace.take()
	require.Len(t, sql, 1, "a fan-out is ONE statement, never a loop of per-schema queries: %q", sql)
	assert.Equal(t, parts, schemasNamed(sql[0], parts...))
	assert.Equal(t, 2*len(parts)-1, strings.Count(sql[0], "UNION ALL"),
		"one UNION ALL over the one node table an Article is in, in every partition (rows with keys, rows without): %s", sql[0])

	fanOuts := logs.matching("pgstore: fan-out read")
	require.Len(t, fanOuts, 1, "every fan-out is logged once")
	assert.Contains(t, fanOuts[0], "shape="+mesh.DescribeShape(mustParse(t, "nodeType:Article partitions:all")))
	assert.Contains(t, fanOuts[0], "schemas=3")
}

func mustParse(t *testing.T, q string) *mesh.Query {
	t.Helper()
	parsed, err := mesh.Parse(q)
	require.NoError(t, err)
	return parsed
}

func TestAnUnroutableQueryAnswersEmptyWithoutTouchingTheDatabase(t *testing.T) {
	t.Parallel()
	trace := &statements{}
	s := openStore(t, pg.Database(t), Options{QueryTracer: trace})
	put(t, s, mesh.Node{Path: "acme/_Foo", NodeType: "Thing"}) // a stray read could return it
	trace.take()

	for _, q := range []string{"path:_Foo/x", "namespace:_Foo", "path:_Foo scope:subtree"} {
		c := initialOf(t, s, q)
		assert.Empty(t, c.Items, "query %s", q)
		assert.Equal(t, []string{}, c.Partitions, "query %s reads no partition", q)
	}
	assert.Empty(t, trace.take(), "an unroutable query runs no statement")

	// Control: the tracer does see reads.
	initialOf(t, s, "path:acme/_Foo")
	assert.Len(t, trace.take(), 1)
}

func TestAQueryReadsTheTablesItsAnchorCanReach(t *testing.T) {
	t.Parallel()
	all := Tables()
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"path:acme/Docs", []string{"mesh_nodes"}},
		{"namespace:acme/Docs", []string{"mesh_nodes"}},
		{"path:acme/Docs scope:ancestors", []string{"mesh_nodes"}},
		{"namespace:acme/Docs/_Access", []string{"access"}},
		{"namespace:_Access", []string{"access"}},
		{"path:acme/Docs/_Notification/n1", []string{"notifications"}},
		{"path:acme/Docs/_Thread scope:subtree", []string{"threads"}},
		{"path:acme/Docs/_Activity scope:descendants", []string{"activities"}},
		{"[acme/a, acme/b/_Access/g]", []string{"mesh_nodes", "access"}},
		{"path:acme scope:descendants", all},
		{"path:acme scope:hierarchy", all},
		{"path:acme/Docs/_Access/g scope:ancestors", all},
		{"nodeType:Role partitions:all", all},
	} {
		assert.Equal(t, c.want, tablesFor(mustParse(t, c.query)), "query %s", c.query)
	}
}

// writeUnannounced commits node path of nodeType into its partition's
// mesh_nodes as another process would, with its node-type row, but without
// the change notice a write sends (the notice is what a reader's routing
// learned from; here it has not arrived yet).
func writeUnannounced(t *testing.T, s *Store, schema, ns, id, nodeType string) {
	t.Helper()
	ctx := testContext(t)
	tx, err := s.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it does nothing
	_, err = tx.Exec(ctx, `SET LOCAL session_replication_role = replica`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO public.mesh_table_types (table_name, node_type) VALUES ('mesh_nodes', $1) ON CONFLICT DO NOTHING`, nodeType)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "mesh_nodes"}.Sanitize()+
		` (namespace, id, name, node_type, content, version, ns_key, id_key, path_key, name_key, type_key, main_key)
		VALUES ($1, $2, $2, $3, '{}'::jsonb, 1, lower($1), lower($2), lower($1 || '/' || $2), lower($2), lower($3), lower($1 || '/' || $2))`,
		ns, id, nodeType)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
}

// TestATypedOneShotReadSeesANodeAnotherProcessCommittedBeforeItsNoticeArrives:
// the reader's routing (which tables have held which node types) is checked
// in the read's own round trip, so a node of a type new to its table is read
// although the reader has not heard of it. Negative control: a routing that
// trusts the reader's cache (the read before this fix; reproduced below by
// reading the tables the cache names) misses the committed node.
func TestATypedOneShotReadSeesANodeAnotherProcessCommittedBeforeItsNoticeArrives(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	writer := openStore(t, url, Options{})
	reader := openStore(t, url, Options{})
	put(t, writer, mesh.Node{Path: "shop/Items/seed", NodeType: "Item"})
	// The reader knows the partition and routes Gadget nowhere yet.
	require.Empty(t, initialOf(t, reader, "namespace:shop/Items nodeType:Gadget").Items)
	tables, stale := reader.schemas.holding(Tables(), []string{"Gadget"})
	require.False(t, stale)
	require.Empty(t, tables, "the reader's routing holds no table for Gadget")

	schema, err := SchemaName("shop")
	require.NoError(t, err)
	writeUnannounced(t, writer, schema, "shop/Items", "g1", "Gadget")

	// Control: reading by the cached routing alone misses it.
	q, err := mesh.Parse("namespace:shop/Items nodeType:Gadget")
	require.NoError(t, err)
	cached, _ := reader.schemas.holding(Tables(), []string{"Gadget"})
	missed, err := reader.selectRows(testContext(t), q, cached, []string{schema})
	require.NoError(t, err)
	assert.Empty(t, missed, "control: the cached routing names no table holding it")

	got := initialOf(t, reader, "namespace:shop/Items nodeType:Gadget")
	assert.Equal(t, []string{"shop/Items/g1"}, pathsOf(got.Items), "the one-shot read sees the committed node")
}
