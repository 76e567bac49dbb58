package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testBudget bounds every database wait in these tests.
const testBudget = 30 * time.Second

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// connect opens a connection to url, closed when t ends.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	})
	return conn
}

// migratedDatabase returns the URL of a fresh database for t, migrated.
func migratedDatabase(t *testing.T) string {
	t.Helper()
	url := pg.Database(t)
	require.NoError(t, Migrate(testContext(t), connect(t, url)))
	return url
}

func queryStrings(t *testing.T, conn *pgx.Conn, sql string, args ...any) []string {
	t.Helper()
	rows, err := conn.Query(testContext(t), sql, args...)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// catalogSnapshot lists every object outside the system schemas with its
// oid and the transaction that last wrote its catalog row, plus pgstore's
// bookkeeping rows: equal snapshots mean nothing was created, replaced or
// altered in between.
func catalogSnapshot(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	return queryStrings(t, conn, `
		WITH user_ns AS (
			SELECT oid, nspname FROM pg_namespace
			WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema')
		SELECT 'schema ' || n.nspname || ' ' || n.oid::text || ' ' || ns.xmin::text
			FROM user_ns n JOIN pg_namespace ns ON ns.oid = n.oid
		UNION ALL
		SELECT 'relation ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text || ' ' || c.oid::text || ' ' || c.xmin::text
			FROM pg_class c JOIN user_ns n ON n.oid = c.relnamespace
		UNION ALL
		SELECT 'function ' || n.nspname || '.' || p.proname || ' ' || p.oid::text || ' ' || p.xmin::text || ' ' || md5(p.prosrc)
			FROM pg_proc p JOIN user_ns n ON n.oid = p.pronamespace
		UNION ALL
		SELECT 'trigger ' || tg.tgrelid::regclass::text || ' ' || tg.tgname || ' ' || tg.oid::text || ' ' || tg.xmin::text
			FROM pg_trigger tg WHERE NOT tg.tgisinternal
		UNION ALL
		SELECT 'constraint ' || n.nspname || '.' || co.conname || ' ' || co.oid::text || ' ' || co.xmin::text
			FROM pg_constraint co JOIN user_ns n ON n.oid = co.connamespace
		UNION ALL
		SELECT 'migration ' || name || ' ' || checksum || ' ' || applied_at::text FROM public.meshrx_migrations
		UNION ALL
		SELECT 'searchable ' || schema_name FROM public.searchable_schemas
		ORDER BY 1`)
}

func schemas(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	return queryStrings(t, conn, `SELECT nspname::text FROM pg_namespace ORDER BY 1`)
}

func TestMigratingTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn := connect(t, migratedDatabase(t))
	_, err := EnsurePartition(ctx, conn, "Alpha")
	require.NoError(t, err)
	before := catalogSnapshot(t, conn)
	require.Contains(t, before, "searchable alpha")

	require.NoError(t, Migrate(ctx, conn))
	schema, err := EnsurePartition(ctx, conn, "Alpha")
	require.NoError(t, err)
	assert.Equal(t, "alpha", schema)
	assert.Equal(t, before, catalogSnapshot(t, conn), "a second Migrate or EnsurePartition must change nothing")

	// Negative control: the snapshot does see a re-run. Applying the
	// migration's SQL again (what Migrate would do without its record)
	// rewrites the functions and shows up.
	migrations, err := loadMigrations()
	require.NoError(t, err)
	_, err = conn.Exec(ctx, migrations[0].sql)
	require.NoError(t, err)
	assert.NotEqual(t, before, catalogSnapshot(t, conn))
}

func TestConcurrentMigratorsAllSucceedAndApplyEachMigrationOnce(t *testing.T) {
	t.Parallel()
	// Without the advisory lock, concurrent CREATE TABLE IF NOT EXISTS and
	// the record INSERTs race and some migrators fail with a duplicate key.
	url := pg.Database(t)
	ctx := testContext(t)
	const migrators = 8
	conns := make([]*pgx.Conn, migrators)
	for i := range conns {
		conns[i] = connect(t, url)
	}
	errs := make([]error, migrators)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, conn := range conns {
		wg.Go(func() {
			<-start
			errs[i] = Migrate(ctx, conn)
		})
	}
	close(start)
	wg.Wait() // each Migrate is bounded by ctx
	for i, err := range errs {
		assert.NoError(t, err, "migrator %d", i)
	}
	migrations, err := loadMigrations()
	require.NoError(t, err)
	names := queryStrings(t, conns[0], `SELECT name FROM public.meshrx_migrations ORDER BY name`)
	want := make([]string, len(migrations))
	for i, m := range migrations {
		want[i] = m.name
	}
	assert.Equal(t, want, names)
}

func TestAnEditedAppliedMigrationIsRefusedByName(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn := connect(t, migratedDatabase(t))
	_, err := conn.Exec(ctx, `UPDATE public.meshrx_migrations SET checksum = 'edited' WHERE name = '0001_partition_schemas.sql'`)
	require.NoError(t, err)

	err = Migrate(ctx, conn)
	var changed *MigrationChangedError
	require.ErrorAs(t, err, &changed)
	assert.Equal(t, "0001_partition_schemas.sql", changed.Name)
	assert.Equal(t, "edited", changed.Applied)
}

func TestEnsurePartitionOnAnUnmigratedDatabaseSaysToMigrate(t *testing.T) {
	t.Parallel()
	conn := connect(t, pg.Database(t))
	_, err := EnsurePartition(testContext(t), conn, "Alpha")
	require.ErrorIs(t, err, ErrNotMigrated)
}

// wantColumns is the node table shape from the design, column by column:
// type, nullable, default, generation expression.
func wantColumns() []string {
	return []string{
		"namespace text NO ''::text -",
		"id text NO - -",
		"path text YES - CASE WHEN (namespace = ''::text) THEN id ELSE ((namespace || '/'::text) || id) END",
		"name text YES - -",
		"node_type text YES - -",
		"main_node text YES - -",
		"content jsonb YES - -",
		"version bigint NO 0 -",
		"state smallint NO 0 -",
		"last_modified timestamp with time zone NO now() -",
		"ns_key text YES - -",
		"id_key text YES - -",
		"path_key text YES - -",
		"name_key text YES - -",
		"type_key text YES - -",
		"main_key text YES - -",
	}
}

func TestAPartitionSchemaHasEveryTableIndexAndTrigger(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn := connect(t, migratedDatabase(t))
	schema, err := EnsurePartition(ctx, conn, "Orders")
	require.NoError(t, err)
	require.Equal(t, "orders", schema)

	wantIndexes := []string{
		"(last_modified DESC)", "(main_key)", "(name_key)", "(namespace, id)",
		"(ns_key, type_key)", "(path)", "(path_key)", "(type_key)",
	}
	for _, schema := range []string{"orders", "system_access"} {
		tables := queryStrings(t, conn, `SELECT table_name::text FROM information_schema.tables
			WHERE table_schema = $1 ORDER BY 1`, schema)
		assert.Equal(t, []string{"access", "activities", "mesh_nodes", "notifications", "threads"}, tables, schema)

		for _, table := range tables {
			where := schema + "." + table
			columns := queryStrings(t, conn, `
				SELECT column_name || ' ' || data_type || ' ' || is_nullable || ' '
				       || coalesce(column_default, '-') || ' ' || coalesce(btrim(regexp_replace(generation_expression, '\s+', ' ', 'g')), '-')
				FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2
				ORDER BY ordinal_position`, schema, table)
			assert.Equal(t, wantColumns(), columns, where)

			indexes := queryStrings(t, conn, `
				SELECT substring(indexdef FROM ' USING btree (.*)$') FROM pg_indexes
				WHERE schemaname = $1 AND tablename = $2 ORDER BY 1`, schema, table)
			assert.Equal(t, wantIndexes, indexes, where)

			triggers := queryStrings(t, conn, `
				SELECT pg_get_triggerdef(oid) FROM pg_trigger
				WHERE tgrelid = $1::regclass AND NOT tgisinternal ORDER BY tgname`, pgx.Identifier{schema, table}.Sanitize())
			require.Len(t, triggers, 4, where)
			for i, fn := range []string{"mesh_notify_change()", "mesh_security_fold()"} {
				assert.Contains(t, triggers[i], "AFTER INSERT OR DELETE OR UPDATE", where)
				assert.Contains(t, triggers[i], "FOR EACH ROW EXECUTE FUNCTION "+fn, where)
			}
			assert.Contains(t, triggers[2], "BEFORE UPDATE ON "+where+" FOR EACH ROW EXECUTE FUNCTION mesh_stale_keys()", where)
			assert.Contains(t, triggers[3], "AFTER INSERT OR UPDATE OF node_type ON "+where+" FOR EACH ROW EXECUTE FUNCTION mesh_note_table_type()", where)
		}
	}

	searchable := queryStrings(t, conn, `SELECT schema_name FROM public.searchable_schemas ORDER BY 1`)
	assert.Equal(t, []string{"orders"}, searchable, "a partition is searchable; system_access never is")

	// The path column follows namespace and id.
	_, err = conn.Exec(ctx, `INSERT INTO orders.mesh_nodes (namespace, id) VALUES ('', 'Orders'), ('Orders/2024', 'o1')`)
	require.NoError(t, err)
	paths := queryStrings(t, conn, `SELECT path FROM orders.mesh_nodes ORDER BY path`)
	assert.Equal(t, []string{"Orders", "Orders/2024/o1"}, paths)
}

// listener receives mesh_node_changes notifications on a connection of its own.
type listener struct {
	t       *testing.T
	conn    *pgx.Conn
	lastN   float64        // the last notice's own number ("n")
	lastRow map[string]any // the last notice's row, nil when it carried none
}

func listen(t *testing.T, url string) *listener {
	t.Helper()
	conn := connect(t, url)
	_, err := conn.Exec(testContext(t), `LISTEN `+NotifyChannel)
	require.NoError(t, err)
	return &listener{t: t, conn: conn}
}

// next returns the next notification's payload, decoded; a notification
// that is not due within testBudget fails the test.
func (l *listener) next() map[string]any {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(l.t.Context(), testBudget)
	defer cancel()
	n, err := l.conn.WaitForNotification(ctx)
	require.NoError(l.t, err, "waiting for a %s notification", NotifyChannel)
	require.Equal(l.t, NotifyChannel, n.Channel)
	var payload map[string]any
	require.NoError(l.t, json.Unmarshal([]byte(n.Payload), &payload), n.Payload)
	// Every notice of the triggers has a number of its own, increasing
	// (so none is folded into an equal one), and carries its row when it
	// fits: both are checked here and taken out, so tests compare the rest.
	if _, isSentinel := payload["sentinel"]; !isSentinel {
		num, ok := payload["n"].(float64)
		require.True(l.t, ok, "the notice has a number: %s", n.Payload)
		require.Greater(l.t, num, l.lastN, "notice numbers increase")
		l.lastN = num
		l.lastRow, _ = payload["row"].(map[string]any)
		delete(payload, "n")
		delete(payload, "row")
	}
	return payload
}

func change(path, op, nodeType string) map[string]any {
	return map[string]any{"path": path, "op": op, "node_type": nodeType}
}

// sentinel is sent after a write that must not notify: notifications from one
// session arrive in commit order, so if the next one is the sentinel, the
// write sent nothing. No waiting for silence.
func sentinel(t *testing.T, conn *pgx.Conn, mark string) map[string]any {
	t.Helper()
	payload := map[string]any{"sentinel": mark}
	b, err := json.Marshal(payload)
	require.NoError(t, err)
	_, err = conn.Exec(testContext(t), `SELECT pg_notify($1, $2)`, NotifyChannel, string(b))
	require.NoError(t, err)
	return payload
}

func TestEveryNodeTableAnnouncesChangesWithPathOpAndNodeType(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := migratedDatabase(t)
	writer := connect(t, url)
	_, err := EnsurePartition(ctx, writer, "Shop")
	require.NoError(t, err)
	l := listen(t, url)

	for _, table := range []string{"mesh_nodes", "notifications"} {
		t.Run(table, func(t *testing.T) {
			l.t = t
			exec := func(sql string, args ...any) {
				t.Helper()
				_, err := writer.Exec(ctx, strings.ReplaceAll(sql, "TABLE", pgx.Identifier{"shop", table}.Sanitize()), args...)
				require.NoError(t, err)
			}

			exec(`INSERT INTO TABLE (namespace, id, node_type, content) VALUES ('Shop', 'n1', 'Order', '{"qty": 1}')`)
			assert.Equal(t, change("Shop/n1", "INSERT", "Order"), l.next())
			require.NotNil(t, l.lastRow, "a small row comes with its notice")
			assert.Equal(t, map[string]any{"qty": float64(1)}, l.lastRow["content"])
			assert.Equal(t, false, l.lastRow["content_null"])
			assert.Equal(t, "Shop/n1", l.lastRow["path"])

			exec(`UPDATE TABLE SET content = '{"qty": 2}' WHERE id = 'n1'`)
			assert.Equal(t, change("Shop/n1", "UPDATE", "Order"), l.next(), "control: a visible update is announced")

			// Nothing a reader sees changes: the same content again, and a
			// touch of last_modified alone.
			exec(`UPDATE TABLE SET content = '{"qty": 2}' WHERE id = 'n1'`)
			exec(`UPDATE TABLE SET last_modified = now() + interval '1 minute' WHERE id = 'n1'`)
			mark := sentinel(t, writer, table+" no-op")
			assert.Equal(t, mark, l.next(), "an update that changes nothing visible must not be announced")

			for _, set := range []string{"name = 'N'", "state = 1", "version = 7", "main_node = 'Shop'"} {
				exec(`UPDATE TABLE SET ` + set + ` WHERE id = 'n1'`)
				assert.Equal(t, change("Shop/n1", "UPDATE", "Order"), l.next(), set)
			}
			// A change of type is announced untyped: readers of the old type
			// and of the new one must both look.
			exec(`UPDATE TABLE SET node_type = 'Invoice' WHERE id = 'n1'`)
			assert.Equal(t, map[string]any{"path": "Shop/n1", "op": "UPDATE", "node_type": nil}, l.next())
			exec(`UPDATE TABLE SET name = 'N2' WHERE id = 'n1'`)
			assert.Equal(t, change("Shop/n1", "UPDATE", "Invoice"), l.next(), "control: the next update is typed again")

			// A move is the old path's removal and the new path's arrival.
			exec(`UPDATE TABLE SET id = 'n2' WHERE id = 'n1'`)
			assert.Equal(t, change("Shop/n1", "DELETE", "Invoice"), l.next())
			assert.Equal(t, change("Shop/n2", "INSERT", "Invoice"), l.next())

			exec(`DELETE FROM TABLE WHERE id = 'n2'`)
			assert.Equal(t, change("Shop/n2", "DELETE", "Invoice"), l.next(), "a delete carries the deleted row's node type")
			assert.Nil(t, l.lastRow, "a delete carries no row")

			exec(`INSERT INTO TABLE (namespace, id) VALUES ('', 'Shop')`)
			assert.Equal(t, map[string]any{"path": "Shop", "op": "INSERT", "node_type": nil}, l.next(),
				"a row without a node type says so")
		})
	}
}

func TestTheLargestRowTheConstraintsAllowStillFitsANotification(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := migratedDatabase(t)
	writer := connect(t, url)
	_, err := EnsurePartition(ctx, writer, "Big")
	require.NoError(t, err)
	l := listen(t, url)

	// Control characters are the worst case: JSON spells each as \u00XX,
	// six bytes for one.
	id := strings.Repeat("\x01", 1024-len("Big/"))
	nodeType := strings.Repeat("\x02", 256)
	_, err = writer.Exec(ctx, `INSERT INTO big.mesh_nodes (namespace, id, node_type) VALUES ('Big', $1, $2)`, id, nodeType)
	require.NoError(t, err, "the payload must stay under NOTIFY's 8000-byte limit")
	assert.Equal(t, change("Big/"+id, "INSERT", nodeType), l.next())
	assert.Nil(t, l.lastRow, "a row too large for the payload is left out of it")

	// Negative control: one byte more is refused by the constraints, so no
	// row can produce a payload that does not fit.
	var pgErr *pgconn.PgError
	_, err = writer.Exec(ctx, `INSERT INTO big.mesh_nodes (namespace, id) VALUES ('Big', $1)`, id+"x")
	require.ErrorAs(t, err, &pgErr)
	assert.Equal(t, "23514", pgErr.Code, "check_violation")
	_, err = writer.Exec(ctx, `INSERT INTO big.mesh_nodes (namespace, id, node_type) VALUES ('Big', 'x', $1)`, nodeType+"x")
	require.ErrorAs(t, err, &pgErr)
	assert.Equal(t, "23514", pgErr.Code, "check_violation")
}

// hostile are partition names (and values) built to break out of quoting.
func hostile() []string {
	return []string{
		`"; DROP SCHEMA public; --`,
		`x'); DROP TABLE public.searchable_schemas; --`,
		`it's`,
		`say "hi"`,
		`a;b`,
		`back\slash\`,
		`$$; SELECT 1; $$`,
		`%I %s %L %%`,
		`MixedCase`,
		` spaced `,
		"tab\tand\nnewline",
		strings.Repeat("m", MaxSchemaNameLen),
	}
}

func TestHostilePartitionNamesAndValuesRoundTripAndNothingEscapes(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := migratedDatabase(t)
	conn := connect(t, url)
	_, err := conn.Exec(ctx, `CREATE TABLE public.canary (v text); INSERT INTO public.canary VALUES ('alive');
		INSERT INTO public.partition_access VALUES ('alice', 'Shop')`)
	require.NoError(t, err)
	l := listen(t, url)

	// A partition name is ASCII (the name rule): others are refused before
	// any SQL, and no schema is made.
	before := schemas(t, conn)
	for _, partition := range []string{`Ünïcødé 日本 ❄`, "\u212Aate", "\u017Fystem"} {
		_, err := EnsurePartition(ctx, conn, partition)
		var nameErr *PartitionNameError
		require.ErrorAs(t, err, &nameErr, "%q", partition)
	}
	assert.Equal(t, before, schemas(t, conn), "a refused partition makes no schema")

	for _, partition := range hostile() {
		before := schemas(t, conn)
		schema, err := EnsurePartition(ctx, conn, partition)
		require.NoError(t, err, "%q", partition)
		assert.Equal(t, strings.ToLower(partition), schema)

		after := schemas(t, conn)
		added := slices.DeleteFunc(slices.Clone(after), func(s string) bool { return slices.Contains(before, s) })
		assert.Equal(t, []string{schema}, added, "exactly the partition's schema is new, named exactly")
		for _, s := range before {
			assert.Contains(t, after, s, "schema %q vanished after partition %q", s, partition)
		}

		// Values as hostile as the name, written and read through the
		// quoted table name with parameters.
		id := partition + `'; DELETE FROM public.canary; --\`
		content := fmt.Sprintf(`{"q": %q, "b": "back\\slash"}`, partition)
		table := pgx.Identifier{schema, "mesh_nodes"}.Sanitize()
		_, err = conn.Exec(ctx, `INSERT INTO `+table+` (namespace, id, name, node_type, content) VALUES ($1, $2, $3, $4, $5)`,
			partition, id, partition, partition, content)
		require.NoError(t, err)
		assert.Equal(t, change(partition+"/"+id, "INSERT", partition), l.next())

		var gotPath, gotName, gotType string
		var gotContent map[string]any
		require.NoError(t, conn.QueryRow(ctx, `SELECT path, name, node_type, content FROM `+table+` WHERE namespace = $1 AND id = $2`,
			partition, id).Scan(&gotPath, &gotName, &gotType, &gotContent))
		assert.Equal(t, partition+"/"+id, gotPath)
		assert.Equal(t, partition, gotName)
		assert.Equal(t, partition, gotType)
		assert.Equal(t, map[string]any{"q": partition, "b": `back\slash`}, gotContent)
	}

	// The public tables are intact.
	assert.Equal(t, []string{"alive"}, queryStrings(t, conn, `SELECT v FROM public.canary`))
	assert.Equal(t, []string{"alice Shop"}, queryStrings(t, conn, `SELECT user_id || ' ' || partition FROM public.partition_access`))
	var searchable []string
	for _, p := range hostile() {
		searchable = append(searchable, strings.ToLower(p))
	}
	slices.Sort(searchable)
	assert.Equal(t, searchable, queryStrings(t, conn, `SELECT schema_name FROM public.searchable_schemas ORDER BY schema_name COLLATE "C"`))
}

func TestNamesThatCannotBePartitionSchemasAreRefusedAndCreateNothing(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn := connect(t, migratedDatabase(t))
	before := catalogSnapshot(t, conn)

	for _, partition := range []string{
		"", "a/b", "_Access", "_Thread", "pg_evil", "PG_Evil", "public", "PUBLIC", "information_schema",
		"system_access", "System_Access", "nul\x00byte", "bad\xffutf8", strings.Repeat("x", MaxSchemaNameLen+1),
		strings.Repeat("é", 32), // 64 bytes
	} {
		_, err := EnsurePartition(ctx, conn, partition)
		var nameErr *PartitionNameError
		require.ErrorAs(t, err, &nameErr, "%q", partition)
		assert.Equal(t, partition, nameErr.Partition)
		assert.NotEmpty(t, nameErr.Reason)
	}
	assert.Equal(t, before, catalogSnapshot(t, conn))

	// The SQL function refuses them too, for callers that bypass Go.
	for _, schema := range []string{"", "pg_evil", "public", "_access", "a/b", "system_access", strings.Repeat("x", 64)} {
		_, err := conn.Exec(ctx, `SELECT public.ensure_partition_schema($1)`, schema)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, "%q", schema)
		assert.Equal(t, "22023", pgErr.Code, "invalid_parameter_value for %q", schema)
	}
	assert.Equal(t, before, catalogSnapshot(t, conn))
}

func TestConcurrentFirstWritesToOnePartitionCreateItOnce(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := migratedDatabase(t)
	const writers = 8
	conns := make([]*pgx.Conn, writers)
	for i := range conns {
		conns[i] = connect(t, url)
	}
	schemasGot := make([]string, writers)
	errs := make([]error, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, conn := range conns {
		wg.Go(func() {
			<-start
			schemasGot[i], errs[i] = EnsurePartition(ctx, conn, "Busy")
		})
	}
	close(start)
	wg.Wait() // each EnsurePartition is bounded by ctx and LockBudget
	for i := range writers {
		require.NoError(t, errs[i], "writer %d", i)
		assert.Equal(t, "busy", schemasGot[i], "writer %d", i)
	}

	// Created once: the schema and everything in it come from one
	// transaction. Two creators would leave two transaction ids here (or,
	// without the lock, a duplicate-key failure above).
	creators := queryStrings(t, conns[0], `
		SELECT DISTINCT xid FROM (
			SELECT n.xmin::text AS xid FROM pg_namespace n WHERE n.nspname = 'busy'
			UNION ALL SELECT c.xmin::text FROM pg_class c WHERE c.relnamespace = 'busy'::regnamespace
			UNION ALL SELECT tg.xmin::text FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid
				WHERE c.relnamespace = 'busy'::regnamespace
			UNION ALL SELECT s.xmin::text FROM public.searchable_schemas s WHERE s.schema_name = 'busy'
		) x`)
	assert.Len(t, creators, 1, "transactions that created parts of the partition: %v", creators)
}

// waitUntilBlocked returns once the backend pid is waiting for a lock. It
// polls pg_stat_activity, bounded by testBudget.
func waitUntilBlocked(t *testing.T, observer *pgx.Conn, pid uint32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		var waiting bool
		err := observer.QueryRow(ctx, `SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&waiting)
		require.NoError(t, err, "waiting for backend %d to block on a lock", pid)
		if waiting {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("backend %d did not block on a lock within %s", pid, testBudget)
		case <-tick.C:
		}
	}
}

// creatorsRace runs first in an open transaction, then second on another
// connection while the first has not committed, and returns second's error.
func creatorsRace(t *testing.T, url string, first func(pgx.Tx) error, second func(*pgx.Conn) error) error {
	t.Helper()
	ctx := testContext(t)
	a, b, observer := connect(t, url), connect(t, url), connect(t, url)
	tx, err := a.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, first(tx))

	result := make(chan error, 1)
	go func() { result <- second(b) }()
	waitUntilBlocked(t, observer, b.PgConn().PID())
	require.NoError(t, tx.Commit(ctx))
	select {
	case err := <-result:
		return err
	case <-time.After(testBudget):
		t.Fatalf("the second creator did not finish within %s of the first committing", testBudget)
		return nil
	}
}

func TestASecondCreatorWaitsForTheFirstInsteadOfColliding(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := migratedDatabase(t)

	// Negative control: the same DDL without the partition lock. The second
	// creator cannot see the first's uncommitted schema, tries to create it
	// too, and fails with a duplicate key once the first commits.
	err := creatorsRace(t, url,
		func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `SELECT public.mesh_create_node_tables('unlocked')`)
			return err
		},
		func(conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, `SELECT public.mesh_create_node_tables('unlocked')`)
			return err
		})
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, "without the lock the second creator must collide")
	assert.Equal(t, "23505", pgErr.Code, "unique_violation")

	// With EnsurePartition the second creator waits on the lock, then finds
	// the schema made and succeeds.
	var second string
	err = creatorsRace(t, url,
		func(tx pgx.Tx) error {
			_, err := EnsurePartition(ctx, tx, "Locked")
			return err
		},
		func(conn *pgx.Conn) error {
			var err error
			second, err = EnsurePartition(ctx, conn, "Locked")
			return err
		})
	require.NoError(t, err)
	assert.Equal(t, "locked", second)
}

func TestAPartitionLockWaitIsBoundedAndLeavesTheSessionsTimeoutAlone(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := migratedDatabase(t)
	holder, waiter := connect(t, url), connect(t, url)
	tx, err := holder.Begin(ctx)
	require.NoError(t, err)
	_, err = EnsurePartition(ctx, tx, "Held") // holds the partition's lock until commit
	require.NoError(t, err)

	// The holder never lets go while this runs, so only the bound can end it.
	_, err = waiter.Exec(ctx, `SELECT public.ensure_partition_schema('held', '100 milliseconds')`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	assert.Equal(t, "55P03", pgErr.Code, "lock_not_available")
	assert.Equal(t, []string{"0"}, queryStrings(t, waiter, `SHOW lock_timeout`), "the caller's own lock_timeout is untouched")

	// Control: once the holder commits, the same call succeeds at once.
	require.NoError(t, tx.Commit(ctx))
	_, err = waiter.Exec(ctx, `SELECT public.ensure_partition_schema('held', '100 milliseconds')`)
	require.NoError(t, err)
	assert.Equal(t, []string{"0"}, queryStrings(t, waiter, `SHOW lock_timeout`))
}
