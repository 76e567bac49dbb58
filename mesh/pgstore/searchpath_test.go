package pgstore

import (
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// pinnedSearchPath is the search_path every function of the store runs
// with (migration 0008).
const pinnedSearchPath = "search_path=" + SearchPath

// unpinnedFunctions lists every function in the store's schemas (public,
// the global satellite schema and every partition schema), except those of
// extensions, whose search_path is not pinnedSearchPath: each as its
// signature and its search_path setting ("" when it has none).
func unpinnedFunctions(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	return queryStrings(t, conn, `
		SELECT f.signature || ' ' || f.path FROM (
			SELECT n.nspname || '.' || p.proname || '(' || pg_catalog.pg_get_function_identity_arguments(p.oid) || ')' AS signature,
			       coalesce((SELECT c FROM unnest(p.proconfig) AS c WHERE c LIKE 'search\_path=%'), '') AS path
			FROM pg_catalog.pg_proc p
			JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
			WHERE (n.nspname IN ('public', $1) OR n.nspname IN (SELECT schema_name FROM public.searchable_schemas))
			  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
			                  WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
		) f
		WHERE f.path <> $2
		ORDER BY 1`, GlobalAccessSchema, pinnedSearchPath)
}

// Every member of its kind: the list is read from pg_proc, so a function a
// later migration adds, or redefines with CREATE OR REPLACE (which drops
// the SET clause), without the pin fails here. Control (in the test): a
// function created without the pin is listed. Control (run): without
// migration 0008 all 15 functions of 0001-0007 are listed.
func TestEveryFunctionOfTheStoreRunsWithAPinnedSearchPath(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn := connect(t, migratedDatabase(t))
	_, err := EnsurePartition(ctx, conn, "acme") // a partition schema is searched too
	require.NoError(t, err)
	assert.Equal(t, qualifiedSQLFunctions, unpinnedFunctions(t, conn), "functions of the store without search_path = pg_catalog, pg_temp")

	_, err = conn.Exec(ctx, `CREATE FUNCTION acme.probe() RETURNS int LANGUAGE sql AS 'SELECT 1'`)
	require.NoError(t, err)
	assert.Equal(t, append([]string{"acme.probe() "}, qualifiedSQLFunctions...), unpinnedFunctions(t, conn), "control: an unpinned function is found")
}

// qualifiedSQLFunctions are the store's functions left without the pin: SQL
// functions called per row, whose bodies name every function, operator and
// relation with its schema instead. A pinned function saves and restores
// the setting on every call (pinned, BackfillKeys took 50 % longer) and is
// never inlined: mesh_fold_ascii, a plain expression, can be inlined;
// mesh_is_security_type is not inlined either way (its EXISTS subquery
// keeps it out, as 0009's header says; 0008's header, which calls both
// inlinable, cannot be corrected in place: a migration's checksum covers
// its comments). Each is run below in a session whose search_path puts a
// hostile schema first.
var qualifiedSQLFunctions = []string{
	"public.mesh_fold_ascii(x text) ",
	"public.mesh_is_security_type(candidate text) ",
}

// The unpinned functions resolve nothing through the caller's search_path.
// Control (run): mesh_is_security_type with its body's = unqualified (as
// 0007 wrote it) answers true for an ungated type here.
func TestTheStoresUnpinnedSQLFunctionsResolveNothingThroughTheCallersSearchPath(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn := connect(t, migratedDatabase(t))
	hostileOperators(t, conn)
	_, err := conn.Exec(ctx, `
		INSERT INTO public.security_fold_types VALUES ('role');
		SET search_path = hostile, pg_catalog, public`)
	require.NoError(t, err)
	assert.Equal(t, []string{"document"}, queryStrings(t, conn, `SELECT public.mesh_fold_ascii('Document')`))
	assert.Equal(t, []string{"false true"}, queryStrings(t, conn,
		`SELECT public.mesh_is_security_type('Document')::text || ' ' || public.mesh_is_security_type('ROLE')::text`))
}

// hostileOperators creates the schema hostile, holding what captures an
// unqualified name resolved through a session's search_path that puts it
// first, on any database: an = on text that is always true (the security
// fold's type check and the type registry compare with it), a
// gen_random_uuid that always returns the same token, and a translate that
// folds every name to "role".
func hostileOperators(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	_, err := conn.Exec(testContext(t), `
		CREATE SCHEMA hostile;
		CREATE FUNCTION hostile.always(a text, b text) RETURNS boolean
			LANGUAGE sql IMMUTABLE AS $$ SELECT true $$;
		CREATE OPERATOR hostile.= (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.always);
		CREATE FUNCTION hostile.gen_random_uuid() RETURNS uuid
			LANGUAGE sql AS $$ SELECT '00000000-0000-0000-0000-000000000000'::uuid $$;
		CREATE FUNCTION hostile.translate(text, text, text) RETURNS text
			LANGUAGE sql IMMUTABLE AS $$ SELECT 'role' $$;`)
	require.NoError(t, err)
}

// hostileSchema is hostileOperators on a migrated database, with a
// pg_notify that records the notice instead of sending it and tables named
// as the store's.
func hostileSchema(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	hostileOperators(t, conn)
	_, err := conn.Exec(testContext(t), `
		CREATE TABLE hostile.captured (what text);
		CREATE TABLE hostile.security_fold (LIKE public.security_fold);
		CREATE TABLE hostile.mesh_table_types (LIKE public.mesh_table_types);
		CREATE FUNCTION hostile.pg_notify(channel text, payload text) RETURNS void
			LANGUAGE sql AS $$ INSERT INTO hostile.captured VALUES (payload) $$;`)
	require.NoError(t, err)
}

// searchPathOutcome is what the triggers did for writes of one session.
type searchPathOutcome struct {
	captured  []string // rows hostile's objects received
	folded    []string // ids in public.security_fold
	noted     []string // node types public.mesh_table_types has for mesh_nodes
	announced []string // paths announced on NotifyChannel, before the sentinel
	token     string   // public.security_fold_version's token
}

// writeWithSearchPath inserts a Document and a (gated) Role node with ids
// ending in suffix into partition acme, then updates the Role node, on a
// session whose search_path is searchPath. The session's own statements
// name the = operator's schema (they are not under test; the triggers
// are). It returns what the triggers did, read on a session of the
// default search_path.
func writeWithSearchPath(t *testing.T, url, searchPath, suffix string) searchPathOutcome {
	t.Helper()
	ctx := testContext(t)
	clean, writer, l := connect(t, url), connect(t, url), listen(t, url)
	_, err := writer.Exec(ctx, `SELECT pg_catalog.set_config('search_path', $1, false)`, searchPath)
	require.NoError(t, err)
	_, err = writer.Exec(ctx, `INSERT INTO acme.mesh_nodes (namespace, id, node_type)
		VALUES ('acme/Docs', $1, 'Document'), ('acme/Docs', $2, 'Role')`, "doc"+suffix, "admin"+suffix)
	require.NoError(t, err, "a write on search_path %q", searchPath)
	_, err = writer.Exec(ctx, `UPDATE acme.mesh_nodes SET content = '{"k": 1}' WHERE id OPERATOR(pg_catalog.=) $1`, "admin"+suffix)
	require.NoError(t, err, "an update on search_path %q", searchPath)

	var out searchPathOutcome
	mark := sentinel(t, clean, "after the writes")
	for {
		p := l.next()
		if _, done := p["sentinel"]; done {
			require.Equal(t, mark, p)
			break
		}
		out.announced = append(out.announced, p["op"].(string)+" "+p["path"].(string))
	}
	out.captured = queryStrings(t, clean, `SELECT what FROM hostile.captured
		UNION ALL SELECT id FROM hostile.security_fold UNION ALL SELECT node_type FROM hostile.mesh_table_types`)
	out.folded = queryStrings(t, clean, `SELECT id FROM public.security_fold ORDER BY 1`)
	out.noted = queryStrings(t, clean, `SELECT node_type FROM public.mesh_table_types WHERE table_name = 'mesh_nodes' ORDER BY 1`)
	require.NoError(t, clean.QueryRow(ctx, `SELECT token::text FROM public.security_fold_version`).Scan(&out.token))
	return out
}

// searchPathDatabase is a migrated database with partition acme, Role
// gated, and the schema hostile.
func searchPathDatabase(t *testing.T) string {
	t.Helper()
	ctx := testContext(t)
	url := migratedDatabase(t)
	conn := connect(t, url)
	_, err := EnsurePartition(ctx, conn, "acme")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `SELECT public.security_fold_add_types(ARRAY['Role'])`)
	require.NoError(t, err)
	hostileSchema(t, conn)
	return url
}

const zeroToken = "00000000-0000-0000-0000-000000000000"

// Control (in the test): the same writes on a database whose functions
// have had the pin removed (as before migration 0008): the notices go to
// hostile.pg_notify, the Document node enters the security fold through
// hostile's =, and the version's token is hostile's constant.
func TestTheStoresTriggersResolveNothingThroughTheWritersSearchPath(t *testing.T) {
	t.Parallel()
	url := searchPathDatabase(t)

	// hostile before pg_catalog, the store's schema last.
	got := writeWithSearchPath(t, url, "hostile, pg_catalog, public", "1")
	assert.Empty(t, got.captured, "nothing reached hostile's objects")
	assert.Equal(t, []string{"admin1"}, got.folded, "only the Role node is folded")
	assert.Equal(t, []string{"Document", "Role"}, got.noted, "both types are registered")
	assert.Equal(t, []string{"INSERT acme/Docs/doc1", "INSERT acme/Docs/admin1", "UPDATE acme/Docs/admin1"}, got.announced)
	assert.NotEqual(t, zeroToken, got.token)

	// A search_path without the store's schema (nor hostile's).
	got = writeWithSearchPath(t, url, "", "2")
	assert.Empty(t, got.captured)
	assert.Equal(t, []string{"admin1", "admin2"}, got.folded)
	assert.Equal(t, []string{"INSERT acme/Docs/doc2", "INSERT acme/Docs/admin2", "UPDATE acme/Docs/admin2"}, got.announced)

	// Control: the pin removed from every function of the store.
	unpinned := searchPathDatabase(t)
	conn := connect(t, unpinned)
	_, err := conn.Exec(testContext(t), `DO $$
		DECLARE f regprocedure;
		BEGIN
			FOR f IN SELECT p.oid FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'public'::regnamespace LOOP
				EXECUTE format('ALTER FUNCTION %s RESET search_path', f);
			END LOOP;
		END $$`)
	require.NoError(t, err)
	got = writeWithSearchPath(t, unpinned, "hostile, pg_catalog, public", "1")
	t.Logf("without the pin: %+v", got)
	assert.NotEmpty(t, got.captured, "control: hostile's pg_notify receives the notices")
	assert.Empty(t, got.announced, "control: nothing is announced")
	// (Before 0008 hostile's = also let the Document node into the fold,
	// through mesh_is_security_type; 0008 qualifies that = instead of
	// pinning the function: TestTheStoresUnpinnedSQLFunctionsResolveNothingThroughTheCallersSearchPath.)
	assert.Equal(t, zeroToken, got.token, "control: the token is hostile's constant")
	assert.True(t, strings.Contains(strings.Join(got.captured, " "), "acme/Docs/admin1"), "control: the notices' payloads reached hostile")
}

// withSearchPath returns dbURL naming search_path sp.
func withSearchPath(t *testing.T, dbURL, sp string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", sp)
	u.RawQuery = q.Encode()
	return u.String()
}

// The store's own statements: a database (or role) whose default
// search_path puts hostile first does not reach them. Control (in the
// test): a store whose URL names that search_path (the caller's choice,
// kept) has hostile's = answer its reads: an absent node is found.
// Control (run): without pinSearchPath in Open, "an absent node is absent"
// fails here, and 13 subtests of the conformance suite failed on such a
// database.
func TestAStoreOnADatabaseWhoseDefaultSearchPathPutsAHostileSchemaFirstReadsItsOwnNodes(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dbURL := searchPathDatabase(t)
	conn := connect(t, dbURL)
	var db string
	require.NoError(t, conn.QueryRow(ctx, `SELECT current_database()`).Scan(&db))
	_, err := conn.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET search_path = hostile, pg_catalog, public`)
	require.NoError(t, err)

	check := func(s *Store) (missing error, folded []string) {
		_, missing = first(t, s.Get("acme/Docs/missing"))
		snap, err := s.SecurityNodes(ctx)
		require.NoError(t, err)
		return missing, pathsOf(snap.Nodes)
	}
	s := openStore(t, dbURL, Options{GatedTypes: []string{"Role"}})
	put(t, s, mesh.Node{Path: "acme/Docs/admin", NodeType: "Role"})
	put(t, s, mesh.Node{Path: "acme/Docs/doc", NodeType: "Document"})
	doc, err := first(t, s.Get("acme/Docs/doc"))
	require.NoError(t, err)
	assert.Equal(t, "Document", doc.NodeType)
	missing, folded := check(s)
	assert.ErrorIs(t, missing, rx.ErrEmpty, "an absent node is absent")
	assert.Equal(t, []string{"acme/Docs/admin"}, folded)
	assert.Empty(t, queryStrings(t, conn, `SELECT what FROM hostile.captured`))

	hostile := openStore(t, withSearchPath(t, dbURL, "hostile,pg_catalog,public"), Options{GatedTypes: []string{"Role"}})
	missing, _ = check(hostile)
	assert.NoError(t, missing, "control: hostile's = makes an absent node present")
}

// What a migration binds outside a function body (a CHECK's operator, a
// column default's function, a generated column's expression) is resolved
// once, through the migrating session's search_path. Migrate on a
// connection of the caller's whose path puts a hostile schema first binds
// none of it there, and leaves the caller's path as it was. Control (run):
// without Migrate's own search_path the CHECK reads OPERATOR(hostile.=), the
// version token's default hostile.gen_random_uuid(), and an unfolded 'Role'
// is let into public.security_fold_types (the reviewer's probe of pgsafe).
func TestMigrateOnACallersConnectionWhosePathPutsAHostileSchemaFirstBindsNothingToIt(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pg.Database(t)
	conn := connect(t, url)
	hostileOperators(t, conn)
	m := connect(t, url)
	_, err := m.Exec(ctx, `SET search_path = hostile, pg_catalog, public`)
	require.NoError(t, err)
	require.NoError(t, Migrate(ctx, m))
	assert.Equal(t, []string{"hostile, pg_catalog, public"}, queryStrings(t, m, `SHOW search_path`), "the caller's search_path is as it was")

	bound := queryStrings(t, conn, `
		SELECT pg_catalog.pg_get_constraintdef(c.oid) FROM pg_catalog.pg_constraint c
		WHERE c.conname = 'security_fold_types_ascii_folded'
		UNION ALL
		SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid) FROM pg_catalog.pg_attrdef d
		WHERE d.adrelid IN ('public.security_fold_version'::regclass, 'system_access.mesh_nodes'::regclass)`)
	require.NotEmpty(t, bound)
	for _, expr := range bound {
		assert.NotContains(t, expr, "hostile", "bound by the migration")
	}
	_, err = conn.Exec(ctx, `INSERT INTO public.security_fold_types VALUES ('Role')`)
	assert.Error(t, err, "an unfolded type name is refused by the CHECK")
}
