package pgstore

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// foldNode returns the folded node at path, if any.
func foldNode(t *testing.T, s *Store, path string) (mesh.SecuritySnapshot, *mesh.Node) {
	t.Helper()
	snap, err := s.SecurityNodes(testContext(t))
	require.NoError(t, err)
	for i, n := range snap.Nodes {
		if n.Path == path {
			return snap, &snap.Nodes[i]
		}
	}
	return snap, nil
}

func TestEverySecurityTypeWriteLandsInTheFold(t *testing.T) {
	t.Parallel()
	const gated = "Store/Plugin"
	url := pg.Database(t)
	s := openStore(t, url, Options{GatedTypes: append(slices.Clone(accessTypes), gated)})
	types := append(slices.Clone(accessTypes), gated, strings.ToLower(accessTypes[0]))

	version := func() int64 {
		snap, _ := foldNode(t, s, "")
		return snap.Version.Seq
	}
	for _, typ := range types {
		id := strings.NewReplacer("/", "-").Replace(typ)
		// A partition's nodes, an owner's _Access satellite and the global
		// _Access satellite: mesh_nodes and access tables, a partition schema
		// and system_access.
		for _, path := range []string{"acme/Sec/" + id, "acme/Sec/_Access/" + id, "_Access/" + id} {
			where := typ + " at " + path
			v0 := version()
			stored := put(t, s, mesh.Node{Path: path, NodeType: typ, Content: json.RawMessage(`{"roles": ["Viewer"]}`)})
			snap, got := foldNode(t, s, path)
			require.NotNil(t, got, "%s: a write lands in the fold as soon as it commits", where)
			assert.Equal(t, stored, *got, where)
			assert.Greater(t, snap.Version.Seq, v0, "%s: the fold version moves", where)

			v1 := snap.Version.Seq
			changed := put(t, s, mesh.Node{Path: path, NodeType: typ, Content: json.RawMessage(`{"roles": ["Editor"]}`)})
			snap, got = foldNode(t, s, path)
			require.NotNil(t, got, where)
			assert.Equal(t, changed, *got, "%s: an update refreshes the folded copy", where)
			assert.Greater(t, snap.Version.Seq, v1, where)

			put(t, s, mesh.Node{Path: path, NodeType: "Page", Content: changed.Content})
			_, got = foldNode(t, s, path)
			assert.Nil(t, got, "%s: a change of type out of the set leaves the fold", where)
			put(t, s, mesh.Node{Path: path, NodeType: typ, Content: changed.Content})
			_, got = foldNode(t, s, path)
			assert.NotNil(t, got, "%s: a change of type into the set enters the fold", where)

			v2 := version()
			del(t, s, path)
			snap, got = foldNode(t, s, path)
			assert.Nil(t, got, "%s: a delete leaves the fold", where)
			assert.Greater(t, snap.Version.Seq, v2, where)
		}
	}

	// Control: other types never enter, and do not move the version.
	v := version()
	put(t, s, mesh.Node{Path: "acme/Sec/page", NodeType: "Page"})
	snap, got := foldNode(t, s, "acme/Sec/page")
	assert.Nil(t, got)
	assert.Equal(t, v, snap.Version.Seq)

	// Negative control: a node table without the fold trigger (a write path
	// the materialisation does not cover) is caught by the census above.
	conn := connect(t, url)
	_, err := conn.Exec(testContext(t), `DROP TRIGGER mesh_nodes_security_fold ON acme.mesh_nodes`)
	require.NoError(t, err)
	put(t, s, mesh.Node{Path: "acme/Sec/uncovered", NodeType: "Role"})
	_, got = foldNode(t, s, "acme/Sec/uncovered")
	assert.Nil(t, got, "without the trigger the write would be missing from the fold")
}

func TestTheFoldChangesInTheWritingTransaction(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	s := openStore(t, url, Options{GatedTypes: accessTypes})
	put(t, s, mesh.Node{Path: "acme/x", NodeType: "Article"}) // creates the partition
	ctx := testContext(t)
	conn := connect(t, url)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO acme.mesh_nodes (namespace, id, node_type) VALUES ('acme', 'r', 'Role')`)
	require.NoError(t, err)
	var inTx, outside int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM public.security_fold WHERE path = 'acme/r'`).Scan(&inTx))
	assert.Equal(t, 1, inTx, "the writing transaction sees its node in the fold")
	_, got := foldNode(t, s, "acme/r")
	assert.Nil(t, got, "nobody else sees it before the commit")
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM public.security_fold WHERE path = 'acme/r'`).Scan(&outside))
	assert.Equal(t, 0, outside, "a rolled-back write leaves nothing in the fold")

	// Control: the same write committed is there.
	_, err = conn.Exec(ctx, `INSERT INTO acme.mesh_nodes (namespace, id, node_type) VALUES ('acme', 'r', 'Role')`)
	require.NoError(t, err)
	_, got = foldNode(t, s, "acme/r")
	assert.NotNil(t, got)
}

func TestTheFoldMigrationBackfillsSecurityNodesWrittenBeforeIt(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	conn := connect(t, url)
	ctx := testContext(t)
	migrations, err := loadMigrations()
	require.NoError(t, err)
	require.Equal(t, "0001_partition_schemas.sql", migrations[0].name)
	// The database as the previous build left it: 0001 applied, with nodes.
	_, err = conn.Exec(ctx, migrations[0].sql)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `CREATE TABLE public.meshrx_migrations (name TEXT PRIMARY KEY, checksum TEXT NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
		INSERT INTO public.meshrx_migrations (name, checksum) VALUES ('`+migrations[0].name+`', '`+migrations[0].checksum+`')`)
	require.NoError(t, err)
	_, err = EnsurePartition(ctx, conn, "Acme")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `
		INSERT INTO acme.mesh_nodes (namespace, id, node_type, version) VALUES ('acme', 'admins', 'Role', 3), ('acme', 'doc', 'Article', 1);
		INSERT INTO acme.access (namespace, id, node_type, main_node, version) VALUES ('acme/_Access', 'g', 'AccessAssignment', 'acme', 1);
		INSERT INTO system_access.access (namespace, id, node_type, version) VALUES ('_Access', 'root', 'AccessAssignment', 1)`)
	require.NoError(t, err)

	s := openStore(t, url, Options{GatedTypes: accessTypes}) // applies 0002
	snap, err := s.SecurityNodes(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"_Access/root", "acme/_Access/g", "acme/admins"}, pathsOf(snap.Nodes),
		"every security node written before the fold existed is in it; the Article is not")
	assert.Positive(t, snap.Version.Seq)
	i := slices.IndexFunc(snap.Nodes, func(n mesh.Node) bool { return n.Path == "acme/admins" })
	assert.Equal(t, int64(3), snap.Nodes[i].Version)
}

func TestAGatedTypeAddedLaterIsBackfilledAndFoldedFromThenOn(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	before := openStore(t, url, Options{})
	put(t, before, mesh.Node{Path: "Store/plugins/p1", NodeType: "Plugin"})
	_, got := foldNode(t, before, "Store/plugins/p1")
	assert.Nil(t, got, "control: an ungated type is not folded")

	openStore(t, url, Options{GatedTypes: []string{"Plugin"}}) // a replica configured with it
	snap, got := foldNode(t, before, "Store/plugins/p1")
	require.NotNil(t, got, "the existing node of the newly gated type is backfilled")
	put(t, before, mesh.Node{Path: "Store/plugins/p2", NodeType: "plugin"})
	after, got := foldNode(t, before, "Store/plugins/p2")
	assert.NotNil(t, got, "and later writes of it are folded (the type compares without case)")
	assert.Greater(t, after.Version.Seq, snap.Version.Seq)

	// Opening again with the same type changes nothing.
	openStore(t, url, Options{GatedTypes: []string{"PLUGIN"}})
	again, _ := foldNode(t, before, "")
	assert.Equal(t, after.Version, again.Version)
}

func TestSecurityNodesReadsTheFoldInOneStatement(t *testing.T) {
	t.Parallel()
	trace := &statements{}
	s := openStore(t, pg.Database(t), Options{QueryTracer: trace, GatedTypes: accessTypes})
	for _, p := range []string{"alpha/r", "beta/r", "gamma/_Access/g", "_Access/root"} {
		put(t, s, mesh.Node{Path: p, NodeType: "Role"})
	}
	trace.take()
	snap, err := s.SecurityNodes(testContext(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"_Access/root", "alpha/r", "beta/r", "gamma/_Access/g"}, pathsOf(snap.Nodes))
	sql := trace.take()
	require.Len(t, sql, 1, "one statement: %q", sql)
	assert.Empty(t, schemasNamed(sql[0], "alpha", "beta", "gamma", GlobalAccessSchema), "no partition schema is read")
	for _, word := range []string{"UNION", "LIMIT", "OFFSET"} {
		assert.NotContains(t, strings.ToUpper(sql[0]), word, "never a fan-out, never paged")
	}
}

func TestSecurityVersionReadsOneRowThatMovesExactlyWithTheFold(t *testing.T) {
	t.Parallel()
	trace := &statements{}
	s := openStore(t, pg.Database(t), Options{QueryTracer: trace, GatedTypes: accessTypes})
	ctx := testContext(t)
	version := func() mesh.SecurityVersion {
		t.Helper()
		trace.take()
		v, err := s.SecurityVersion(ctx)
		require.NoError(t, err)
		sql := trace.take()
		require.Len(t, sql, 1, "one statement: %q", sql)
		assert.Contains(t, sql[0], "public.security_fold_version")
		assert.NotContains(t, sql[0], "public.security_fold ", "the fold's rows are not read")
		return v
	}
	snapshot := func() mesh.SecurityVersion {
		t.Helper()
		snap, err := s.SecurityNodes(ctx)
		require.NoError(t, err)
		return snap.Version
	}

	v0 := version()
	assert.Equal(t, snapshot(), v0, "the version SecurityNodes would return")
	put(t, s, mesh.Node{Path: "acme/doc", NodeType: "Article"})
	assert.Equal(t, v0, version(), "a write of another type does not move it")
	put(t, s, mesh.Node{Path: "acme/r", NodeType: "Role"})
	v1 := version()
	assert.Greater(t, v1.Seq, v0.Seq, "a security write moves it")
	assert.NotEqual(t, v1.Token, v0.Token, "with a fresh token")
	assert.NotZero(t, v1.Token)
	assert.Equal(t, snapshot(), v1)

	require.NoError(t, s.Close())
	_, err := s.SecurityVersion(ctx)
	assert.True(t, mesh.IsUnavailable(err), "a closed store cannot tell: %v", err)
}

// An update that keeps a node's type costs one gated-type lookup, not two
// (migration 0009); a change of type still looks up both. Counted by the
// server (track_functions), so the figure does not depend on the machine's
// load. Control (in the test): a change of type asks twice. Control (run):
// with 0002's trigger function (both asked on every update) the kept-type
// updates count 2 each.
func TestAnUpdateThatKeepsANodesTypeAsksOnceWhetherTheTypeIsGated(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn := connect(t, migratedDatabase(t))
	_, err := EnsurePartition(ctx, conn, "acme")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `SELECT public.security_fold_add_types(ARRAY['Role']);
		INSERT INTO acme.mesh_nodes (namespace, id, node_type) VALUES ('acme', 'r', 'Role'), ('acme', 'd', 'Document')`)
	require.NoError(t, err)

	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL track_functions = 'all'`)
	require.NoError(t, err)
	lookups := func(update string) int64 {
		t.Helper()
		var before, after int64
		const calls = `SELECT coalesce(pg_catalog.pg_stat_get_xact_function_calls('public.mesh_is_security_type(text)'::regprocedure), 0)`
		require.NoError(t, tx.QueryRow(ctx, calls).Scan(&before))
		tag, err := tx.Exec(ctx, update)
		require.NoError(t, err)
		require.Equal(t, int64(1), tag.RowsAffected(), update)
		require.NoError(t, tx.QueryRow(ctx, calls).Scan(&after))
		return after - before
	}
	assert.Equal(t, int64(1), lookups(`UPDATE acme.mesh_nodes SET content = '{"k": 1}' WHERE id = 'r'`), "a gated node's update")
	assert.Equal(t, int64(1), lookups(`UPDATE acme.mesh_nodes SET content = '{"k": 1}' WHERE id = 'd'`), "an ungated node's update")
	assert.Equal(t, int64(2), lookups(`UPDATE acme.mesh_nodes SET node_type = 'Role' WHERE id = 'd'`), "control: a change of type")
	assert.Equal(t, []string{"d", "r"}, queryStrings(t, tx.Conn(), `SELECT id FROM public.security_fold ORDER BY 1`), "the type change entered the fold")
}

// foldFunction returns the statement of migration file that defines the
// security fold's trigger function, as the file has it.
func foldFunction(t *testing.T, file string) string {
	t.Helper()
	b, err := migrationFiles.ReadFile("migrations/" + file)
	require.NoError(t, err)
	s := string(b)
	start := strings.Index(s, "CREATE OR REPLACE FUNCTION public.mesh_security_fold()")
	require.GreaterOrEqual(t, start, 0, file)
	end := strings.Index(s[start:], "\n$fn$;")
	require.Greater(t, end, 0, file)
	return s[start : start+end+len("\n$fn$;")]
}

// Migration 0009 changed how often the trigger looks a type up, not what
// the fold holds: after every kind of write (a gated type in any case,
// entering and leaving the gate, a rename of the key, a no-op update, a
// type added to the gate later, deletes) the fold's rows, every column,
// and its version are what 0002's trigger function gives in a database
// running it instead. Negative control (in the test): the same function
// reusing the old answer on every update, type changes included, differs.
func TestTheFoldHoldsWhatTheTriggerBefore0009GivesAfterEveryKindOfWrite(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	head := foldFunction(t, "0009_security_fold_one_type_check.sql")
	const kept = "IF TG_OP = 'UPDATE' AND OLD.node_type IS NOT DISTINCT FROM NEW.node_type THEN"
	require.Contains(t, head, kept)
	fns := map[string]string{
		"head":    "",
		"0002":    foldFunction(t, "0002_security_fold.sql"),
		"control": strings.Replace(head, kept, "IF TG_OP = 'UPDATE' THEN", 1),
	}
	conns := map[string]*pgx.Conn{}
	for name, fn := range fns {
		conn := connect(t, migratedDatabase(t))
		if fn != "" {
			_, err := conn.Exec(ctx, fn)
			require.NoError(t, err, name)
		}
		_, err := EnsurePartition(ctx, conn, "acme")
		require.NoError(t, err)
		_, err = conn.Exec(ctx, `SELECT public.security_fold_add_types(ARRAY['Role'])`)
		require.NoError(t, err)
		conns[name] = conn
	}
	fold := func(conn *pgx.Conn) []string {
		return queryStrings(t, conn, `SELECT concat_ws('|', schema_name, table_name, namespace, id, path, name, node_type,
			main_node, content::text, version, state, last_modified) FROM public.security_fold
			UNION ALL SELECT 'version ' || version FROM public.security_fold_version ORDER BY 1`)
	}
	const at = `'2026-01-01T00:00:00Z'`
	differed, most := false, 0
	for _, write := range []string{
		`INSERT INTO acme.mesh_nodes (namespace, id, name, node_type, content, last_modified) VALUES
			('acme', 'r', 'R', 'Role', '{"k": 0}', ` + at + `), ('acme', 'd', 'D', 'Document', '{}', ` + at + `),
			('acme', 'x', 'X', 'ROLE', '{}', ` + at + `), ('acme', 'n', 'N', NULL, '{}', ` + at + `),
			('', 'g', 'G', 'rOlE', '{}', ` + at + `)`,
		`UPDATE acme.mesh_nodes SET content = '{"k": 1}', version = version + 1 WHERE id IN ('r', 'd')`,
		`UPDATE acme.mesh_nodes SET content = content WHERE id IN ('r', 'x')`,
		`UPDATE acme.mesh_nodes SET node_type = 'role' WHERE id = 'd'`,
		`UPDATE acme.mesh_nodes SET node_type = 'Document', name = 'R2' WHERE id = 'r'`,
		`UPDATE acme.mesh_nodes SET node_type = 'Role', state = 1 WHERE id = 'x'`,
		`UPDATE acme.mesh_nodes SET node_type = 'Role' WHERE id = 'n'`,
		`UPDATE acme.mesh_nodes SET node_type = NULL WHERE id = 'g'`,
		`UPDATE acme.mesh_nodes SET id = 'x2', main_node = 'acme/r' WHERE id = 'x'`,
		`UPDATE acme.mesh_nodes SET namespace = 'other' WHERE id = 'n'`,
		`SELECT public.security_fold_add_types(ARRAY['document'])`,
		`UPDATE acme.mesh_nodes SET node_type = 'DOCUMENT' WHERE id = 'r'`,
		`DELETE FROM acme.mesh_nodes WHERE id IN ('d', 'g')`,
		`DELETE FROM acme.mesh_nodes`,
	} {
		for _, conn := range conns {
			_, err := conn.Exec(ctx, write)
			require.NoError(t, err, write)
		}
		want := fold(conns["0002"])
		assert.Equal(t, want, fold(conns["head"]), "after %s", write)
		differed = differed || !slices.Equal(want, fold(conns["control"]))
		most = max(most, len(want))
	}
	assert.GreaterOrEqual(t, most, 5, "the writes put rows in the fold (four and its version)")
	assert.True(t, differed, "control: reusing the old answer across a type change folds other rows")
}
