package pgstore

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// boundOutsideTheStore lists what a node table of any schema (its column
// defaults and generated columns, CHECKs, triggers and indexes) calls that
// could resolve, or has resolved, a name through some session's
// search_path: a function or operator outside pg_catalog (references to
// PostgreSQL's own are not recorded in pg_depend), other than a function of
// public that runs pinned or is one of qualifiedSQLFunctions. A default or
// CHECK is bound once, when its table is created; a trigger runs its
// function as it is now: pinned, it resolves nothing through the writer's
// path.
func boundOutsideTheStore(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	return queryStrings(t, conn, `
		WITH owned AS (
			SELECT 'default' AS kind, 'pg_catalog.pg_attrdef'::regclass AS classid, oid AS objid, adrelid AS rel FROM pg_catalog.pg_attrdef
			UNION ALL SELECT 'constraint', 'pg_catalog.pg_constraint'::regclass, oid, conrelid FROM pg_catalog.pg_constraint
			UNION ALL SELECT 'trigger', 'pg_catalog.pg_trigger'::regclass, oid, tgrelid FROM pg_catalog.pg_trigger
			UNION ALL SELECT 'index', 'pg_catalog.pg_class'::regclass, indexrelid, indrelid FROM pg_catalog.pg_index
		)
		SELECT o.kind || ' of ' || o.rel::regclass::text || ' uses ' ||
		       CASE WHEN p.oid IS NOT NULL THEN p.oid::regprocedure::text ELSE d.refobjid::regoperator::text END
		FROM owned o
		JOIN pg_catalog.pg_class c ON c.oid = o.rel
		JOIN pg_catalog.pg_depend d ON d.classid = o.classid AND d.objid = o.objid
		LEFT JOIN pg_catalog.pg_proc p ON d.refclassid = 'pg_catalog.pg_proc'::regclass AND p.oid = d.refobjid
		WHERE c.relname = ANY ($1)
		  AND d.refclassid IN ('pg_catalog.pg_proc'::regclass, 'pg_catalog.pg_operator'::regclass)
		  AND NOT coalesce(p.pronamespace = 'public'::regnamespace
		                   AND ($2 = ANY (coalesce(p.proconfig, '{}')) OR p.proname = ANY ($3)), false)
		ORDER BY 1`, Tables(), pinnedSearchPath, []string{"mesh_fold_ascii", "mesh_is_security_type"})
}

// misfolded lists the rows of acme.mesh_nodes whose keys are not the
// folds of their own fields (a row without keys is not listed).
func misfolded(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	return queryStrings(t, conn, `SELECT id FROM acme.mesh_nodes
		WHERE path_key IS NOT NULL
		  AND (id_key, path_key, ns_key, type_key) IS DISTINCT FROM (lower(id), lower(path), lower(namespace), lower(node_type))
		ORDER BY 1`)
}

// A store whose partitions were made before migration 0008 (their tables,
// defaults, generated paths, CHECKs and triggers created by 0001-0007's
// functions, unpinned) and then migrated to head: nothing a write to such
// a partition runs, nor a partition created after by a caller whose path
// puts a hostile schema first, nor BackfillKeys on such a caller's
// connection, resolves a name through that path.
//
// Controls (in the test): the same writes on a store left at 0007 reach
// hostile's pg_notify; a trigger and a default naming what is not pinned
// are listed by boundOutsideTheStore. Control (run): BackfillKeys without
// its own search_path gives rows another row's keys here ("keys fold
// their own row" lists them).
func TestPartitionsMadeBeforeMigration0008ResolveNothingThroughAWritersSearchPathOnceMigrated(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const hostilePath = "hostile, pg_catalog, public"

	// upgraded is a database at 0007 with partition acme (and
	// system_access) holding rows, hostile's schema, and Role gated;
	// migrated to head unless atHead is false.
	upgraded := func(atHead bool) (string, *pgx.Conn) {
		url := pg.Database(t)
		conn := connect(t, url)
		applyMigrationsBefore(t, conn, "0008_pinned_search_path.sql")
		_, err := EnsurePartition(ctx, conn, "acme")
		require.NoError(t, err)
		_, err = conn.Exec(ctx, `INSERT INTO acme.mesh_nodes (namespace, id, node_type)
			VALUES ('acme/Old', 'a', 'Document'), ('acme/Old', 'b', 'Document'), ('acme/Old', 'c', 'Role')`)
		require.NoError(t, err)
		if atHead {
			require.NoError(t, Migrate(ctx, conn))
		}
		_, err = conn.Exec(ctx, `SELECT public.security_fold_add_types(ARRAY['Role'])`)
		require.NoError(t, err)
		hostileSchema(t, conn)
		// What a default or generated column would call, were it bound
		// through the writer's path.
		_, err = conn.Exec(ctx, `
			CREATE FUNCTION hostile.now() RETURNS timestamptz
				LANGUAGE sql AS $$ SELECT '2000-01-01 00:00:00+00'::timestamptz $$;
			CREATE FUNCTION hostile.cat(a text, b text) RETURNS text
				LANGUAGE sql IMMUTABLE AS $$ SELECT 'hijacked' $$;
			CREATE OPERATOR hostile.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.cat);`)
		require.NoError(t, err)
		return url, conn
	}

	url, conn := upgraded(true)
	assert.Empty(t, boundOutsideTheStore(t, conn), "before the hostile writes")

	got := writeWithSearchPath(t, url, hostilePath, "1")
	assert.Empty(t, got.captured, "nothing reached hostile's objects")
	assert.Equal(t, []string{"admin1", "c"}, got.folded, "only Role nodes are folded")
	assert.Equal(t, []string{"INSERT acme/Docs/doc1", "INSERT acme/Docs/admin1", "UPDATE acme/Docs/admin1"}, got.announced)
	assert.NotEqual(t, zeroToken, got.token)
	assert.Equal(t, []string{"acme/Docs/admin1 true", "acme/Docs/doc1 true"}, queryStrings(t, conn,
		`SELECT path || ' ' || (last_modified > '2001-01-01')::text FROM acme.mesh_nodes WHERE namespace = 'acme/Docs' ORDER BY 1`),
		"the generated path and the default time are PostgreSQL's")

	// A partition and a global satellite schema created now, by a caller
	// whose path puts hostile first.
	caller := connect(t, url)
	_, err := caller.Exec(ctx, `SELECT pg_catalog.set_config('search_path', $1, false)`, hostilePath)
	require.NoError(t, err)
	_, err = EnsurePartition(ctx, caller, "beta")
	require.NoError(t, err)
	require.NoError(t, EnsureGlobalSchema(ctx, caller, "_audit"))
	_, err = caller.Exec(ctx, `INSERT INTO beta.mesh_nodes (namespace, id, node_type) VALUES ('beta/Docs', 'x', 'Role')`)
	require.NoError(t, err)
	assert.Equal(t, []string{"beta/Docs/x true"}, queryStrings(t, conn,
		`SELECT path || ' ' || (last_modified > '2001-01-01')::text FROM beta.mesh_nodes`))
	assert.Empty(t, queryStrings(t, conn, `SELECT what FROM hostile.captured`))

	// The rows written by SQL have no keys: the caller backfills them.
	_, err = BackfillKeys(ctx, caller)
	require.NoError(t, err)
	assert.Equal(t, []string{"5"}, queryStrings(t, conn, `SELECT count(*)::text FROM acme.mesh_nodes WHERE path_key IS NOT NULL`), "every row got keys")
	assert.Empty(t, misfolded(t, conn), "keys fold their own row")
	assert.Equal(t, []string{hostilePath}, queryStrings(t, caller, `SHOW search_path`), "the caller's search_path is as it was")

	assert.Empty(t, boundOutsideTheStore(t, conn), "after: nothing of a node table, old or new, calls what resolves through a path")

	// Control: left at 0007, the same writes reach hostile's pg_notify.
	oldURL, _ := upgraded(false)
	got = writeWithSearchPath(t, oldURL, hostilePath, "1")
	assert.NotEmpty(t, got.captured, "control: at 0007, hostile's pg_notify receives the notices")
	assert.Equal(t, zeroToken, got.token, "control: at 0007, the token is hostile's")

	// Control: what the audit finds.
	_, err = conn.Exec(ctx, `
		CREATE FUNCTION public.unpinned() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
		CREATE TRIGGER probe AFTER INSERT ON acme.threads FOR EACH ROW EXECUTE FUNCTION public.unpinned();
		ALTER TABLE acme.activities ALTER COLUMN last_modified SET DEFAULT hostile.now();`)
	require.NoError(t, err)
	assert.Equal(t, []string{"default of acme.activities uses hostile.now()", "trigger of acme.threads uses unpinned()"},
		boundOutsideTheStore(t, conn), "control: an unpinned trigger function and a hostile default are listed")
}
