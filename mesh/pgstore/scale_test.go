package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore/internal/sqlgen"
)

// The pinned read of the scale tests: the 50 Items of partition "scale",
// among n nodes of other namespaces and types in the same table.
const (
	scalePartition = "scale"
	scaleQuery     = "namespace:scale nodeType:Item"
	scaleMatching  = 50
)

// fillScale writes, into partition "scale" (created through s), 50 Items
// in namespace "scale" and n-50 other nodes spread over 1,000 namespaces
// below it and three other types, all with one INSERT … SELECT from
// generate_series. The data is ASCII, where PostgreSQL's lower() and mesh's
// folding agree, so the keys are computed in SQL; keyed=false leaves them
// NULL, as rows written before migration 0003. It then ANALYZEs the table.
func fillScale(ctx context.Context, t testing.TB, s *Store, n int, keyed bool) {
	t.Helper()
	_, err := s.Put(ctx, mesh.Node{Path: scalePartition + "/item-0000", NodeType: "Item", Name: "Item 0"})
	require.NoError(t, err)
	keys := `NULL, NULL, NULL, NULL, NULL, NULL`
	if keyed {
		keys = `lower(ns), lower(id), lower(ns || '/' || id), lower(name), lower(typ), lower(ns || '/' || id)`
	}
	// Without the row triggers: 1e5 change notices would flood the
	// listener, and nothing here is a security type. The node types the
	// type trigger would have recorded are recorded by hand.
	tx, err := s.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it does nothing
	_, err = tx.Exec(ctx, `SET LOCAL session_replication_role = replica`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO public.mesh_table_types (table_name, node_type)
		VALUES ('mesh_nodes', 'Doc'), ('mesh_nodes', 'Note'), ('mesh_nodes', 'Folder') ON CONFLICT DO NOTHING`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `
		INSERT INTO scale.mesh_nodes (namespace, id, name, node_type, content, version, ns_key, id_key, path_key, name_key, type_key, main_key)
		SELECT ns, id, name, typ, jsonb_build_object('n', i), 1, `+keys+`
		FROM (
			SELECT i,
			       CASE WHEN i < $1 THEN 'scale' ELSE 'scale/Bulk-' || lpad((i % 1000)::text, 3, '0') END AS ns,
			       CASE WHEN i < $1 THEN 'item-' || lpad(i::text, 4, '0') ELSE 'Node-' || i END AS id,
			       CASE WHEN i < $1 THEN 'Item ' || i ELSE 'Node ' || i END AS name,
			       CASE WHEN i < $1 THEN 'Item' ELSE (ARRAY['Doc', 'Note', 'Folder'])[1 + i % 3] END AS typ
			FROM generate_series(1, $2 - 1) AS i
		) AS g`, scaleMatching, n)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	_, err = s.pool.Exec(ctx, `ANALYZE scale.mesh_nodes`)
	require.NoError(t, err)
}

// traced records the statements (with arguments) a pool runs.
type traced struct {
	mu   sync.Mutex
	last []pgx.TraceQueryStartData
}

func (r *traced) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(d.SQL, "-- routing") || strings.HasPrefix(d.SQL, "-- fence") || strings.HasPrefix(d.SQL, "-- sender") {
		// reloading the type routing, a live query's fence, or the
		// listener's look-up of a notice's sender (which runs when a
		// notice of the test's own writes arrives, whatever the test
		// reads then: CI failed so at a52137b): not a read
		return ctx
	}
	r.mu.Lock()
	r.last = append(r.last, d)
	r.mu.Unlock()
	return ctx
}

func (r *traced) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A typed read's rows statement arrives in a batch after its routing check,
// which is not recorded.
func (r *traced) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (r *traced) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if !strings.HasPrefix(d.SQL, "-- routing") {
		r.mu.Lock()
		r.last = append(r.last, pgx.TraceQueryStartData{SQL: d.SQL, Args: d.Args})
		r.mu.Unlock()
	}
}

func (r *traced) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (r *traced) take() []pgx.TraceQueryStartData {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.last
	r.last = nil
	return out
}

// planNodes returns the node types of the plan EXPLAIN gives for sql.
func planNodes(ctx context.Context, t *testing.T, s *Store, sql string, args ...any) []string {
	t.Helper()
	var raw []byte
	require.NoError(t, s.pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&raw))
	var plans []struct{ Plan json.RawMessage }
	require.NoError(t, json.Unmarshal(raw, &plans))
	var kinds []string
	var walk func(json.RawMessage)
	walk = func(m json.RawMessage) {
		var p struct {
			NodeType string            `json:"Node Type"`
			Plans    []json.RawMessage `json:"Plans"`
		}
		require.NoError(t, json.Unmarshal(m, &p))
		kinds = append(kinds, p.NodeType)
		for _, c := range p.Plans {
			walk(c)
		}
	}
	walk(plans[0].Plan)
	return kinds
}

func usesIndex(kinds []string) bool {
	for _, k := range kinds {
		if strings.Contains(k, "Index") {
			return true
		}
	}
	return false
}

func TestAPinnedReadOfA100000RowPartitionIsAnIndexScan(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	trace := &traced{}
	s := openStore(t, pg.Database(t), Options{QueryTracer: trace})
	fillScale(ctx, t, s, 100_000, true)

	trace.take()
	c := initialOf(t, s, scaleQuery)
	assert.Len(t, c.Items, scaleMatching)
	statements := trace.take()
	require.Len(t, statements, 1, "the Initial is one statement")
	read := statements[0]

	kinds := planNodes(ctx, t, s, read.SQL, read.Args...)
	assert.True(t, usesIndex(kinds), "the pinned read is served by an index: %v\n%s", kinds, read.SQL)
	assert.NotContains(t, kinds, "Seq Scan", "the pinned read does not scan its partition: %s", read.SQL)

	// Control: the predicate pgstore sent before folded keys (spelled-out
	// case-insensitive patterns) scans the whole table.
	old := `SELECT ` + sqlgen.Columns + ` FROM scale.mesh_nodes AS n
		WHERE n.namespace ~ $1 AND coalesce(n.node_type, '') ~ $2 ORDER BY path COLLATE "C"`
	oldKinds := planNodes(ctx, t, s, old, `^(?:[sS][cC][aA][lL][eE])$`, `^(?:[iI][tT][eE][mM])$`)
	assert.Contains(t, oldKinds, "Seq Scan", "the regular-expression predicate scans: %v", oldKinds)
}

func TestRowsWithoutKeysAreReadUntilTheBackfillFoldsThemAndItIsResumable(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pg.Database(t)
	// The store starts no backfill of its own (SkipMigrate; the deploy step
	// MigrateURL ran first): with the background backfill Open starts, this
	// test depended on that backfill finishing before fillScale wrote the
	// rows without keys, and failed on a loaded machine when it ran after
	// and folded them first.
	require.NoError(t, MigrateURL(ctx, url))
	s := openStore(t, url, Options{SkipMigrate: true})
	const n = 5_000
	fillScale(ctx, t, s, n, false) // as if written before migration 0003

	// Before the backfill: exact, through the spelled-out patterns.
	assert.Len(t, initialOf(t, s, scaleQuery).Items, scaleMatching)
	assert.Len(t, initialOf(t, s, "namespace:scale/bulk-107").Items, n/1000)

	conn := connect(t, url)
	// Another backfill holds the lock: this one does nothing.
	other := connect(t, url)
	_, err := other.Exec(ctx, `SELECT pg_advisory_lock($1)`, backfillLockKey)
	require.NoError(t, err)
	rep, err := BackfillKeys(ctx, conn)
	require.NoError(t, err)
	assert.True(t, rep.Skipped)
	_, err = other.Exec(ctx, `SELECT pg_advisory_unlock($1)`, backfillLockKey)
	require.NoError(t, err)

	// Stopped part-way: the context ends as the first batch's UPDATE is
	// sent, so that batch rolls back. Then resumed: every row ends with the
	// keys KeysOf gives, each filled once.
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	cfg.Tracer = stopAtUpdate{stop}
	stopping, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer stopping.Close(context.WithoutCancel(ctx))
	partial, err := BackfillKeys(stopCtx, stopping)
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, partial.Rows, "the interrupted batch is rolled back")
	// The interrupted session may still be ending on the server: wait
	// (bounded by ctx) until its lock is free.
	_, err = other.Exec(ctx, `SELECT pg_advisory_lock($1), pg_advisory_unlock($1)`, backfillLockKey)
	require.NoError(t, err)
	rest, err := BackfillKeys(ctx, conn)
	require.NoError(t, err)
	assert.Equal(t, int64(n-1), rest.Rows, "every row without keys is filled once (the Put of fillScale wrote its own)")
	again, err := BackfillKeys(ctx, conn)
	require.NoError(t, err)
	assert.Zero(t, again.Rows, "a second backfill finds nothing to do")
	assert.Zero(t, again.Indexes)

	rows, err := conn.Query(ctx, `SELECT namespace, id, coalesce(name, ''), coalesce(node_type, ''), coalesce(main_node, ''), `+
		sqlgen.KeyColumns+` FROM scale.mesh_nodes`)
	require.NoError(t, err)
	var ns, id, name, typ, main string
	var k sqlgen.Keys
	checked := 0
	require.False(t, rest.Skipped)
	_, err = pgx.ForEachRow(rows, []any{&ns, &id, &name, &typ, &main, &k.Namespace, &k.ID, &k.Path, &k.Name, &k.NodeType, &k.MainNode}, func() error {
		if k != sqlgen.KeysOf(ns, id, name, typ, main) {
			return fmt.Errorf("row %s/%s has keys %+v", ns, id, k)
		}
		checked++
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, n, checked)

	assert.Len(t, initialOf(t, s, scaleQuery).Items, scaleMatching)
	assert.Len(t, initialOf(t, s, "namespace:scale/bulk-107").Items, n/1000)
}

func TestAWriterThatChangesAFieldWithoutItsKeysClearsThem(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pg.Database(t)
	// Migrated by the deploy step and opened with SkipMigrate, so that no
	// background backfill runs: one that reached acme's table after the
	// UPDATE below (on a loaded machine it starts late) would fold the
	// cleared keys again, and the test would see the backfill's progress,
	// not the trigger.
	require.NoError(t, MigrateURL(ctx, url))
	s := openStore(t, url, Options{SkipMigrate: true})
	put(t, s, mesh.Node{Path: "acme/a", NodeType: "Item", Name: "Alpha"})
	conn := connect(t, url) // not the store's: it does not say it writes keys
	_, err := conn.Exec(ctx, `UPDATE acme.mesh_nodes SET name = 'Beta' WHERE id = 'a'`)
	require.NoError(t, err)
	var nameKey *string
	require.NoError(t, conn.QueryRow(ctx, `SELECT name_key FROM acme.mesh_nodes WHERE id = 'a'`).Scan(&nameKey))
	assert.Nil(t, nameKey, "a key that no longer folds its field is cleared")
	assert.Len(t, initialOf(t, s, "namespace:acme name:beta").Items, 1, "the row is still found, by the pattern")
	assert.Empty(t, initialOf(t, s, "namespace:acme name:alpha").Items)

	// A row's keys are all set or all NULL: a read tells the two kinds
	// apart by path_key alone.
	_, err = conn.Exec(ctx, `INSERT INTO acme.mesh_nodes (namespace, id, path_key) VALUES ('acme', 'half', 'acme/half')`)
	require.ErrorContains(t, err, "mesh_nodes_keys_all_or_none")

	// A change of case only leaves the keys rightly as they were, which the
	// trigger cannot tell from a writer that forgot them: it clears them,
	// and the row is still found.
	put(t, s, mesh.Node{Path: "acme/b", NodeType: "Item", Name: "Gamma"})
	put(t, s, mesh.Node{Path: "acme/b", NodeType: "Item", Name: "GAMMA"})
	require.NoError(t, conn.QueryRow(ctx, `SELECT name_key FROM acme.mesh_nodes WHERE id = 'b'`).Scan(&nameKey))
	assert.Nil(t, nameKey)
	assert.Len(t, initialOf(t, s, "namespace:acme name:gamma").Items, 1)

	// Control: a rename the keys follow keeps them.
	put(t, s, mesh.Node{Path: "acme/c", NodeType: "Item", Name: "Delta"})
	put(t, s, mesh.Node{Path: "acme/c", NodeType: "Item", Name: "Epsilon"})
	require.NoError(t, conn.QueryRow(ctx, `SELECT name_key FROM acme.mesh_nodes WHERE id = 'c'`).Scan(&nameKey))
	require.NotNil(t, nameKey)
	assert.Equal(t, "epsilon", *nameKey)
}

// stopAtUpdate ends a context when its connection sends an UPDATE.
type stopAtUpdate struct{ stop context.CancelFunc }

func (s stopAtUpdate) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(strings.TrimSpace(d.SQL), "UPDATE") {
		s.stop()
	}
	return ctx
}

func (stopAtUpdate) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A conditional write carries the folded keys as Put does, so the row it
// writes is found by the key indexes at once. (Negative control: a write
// without the keys leaves them NULL on insert and, on update, has them
// cleared by the trigger — TestAWriterThatChangesAFieldWithoutItsKeysClearsThem
// shows the second; the check below would then see nil.)
func TestAConditionalWriteFoldsItsKeysAsAPutDoes(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pg.Database(t)
	s := openStore(t, url, Options{})
	conn := connect(t, url)
	keysOf := func(id string) (name, typ *string) {
		t.Helper()
		require.NoError(t, conn.QueryRow(ctx, `SELECT name_key, type_key FROM acme.mesh_nodes WHERE id = $1`, id).Scan(&name, &typ))
		return name, typ
	}

	created, err := s.PutIfVersion(ctx, mesh.Node{Path: "acme/cas", NodeType: "Item", Name: "Alpha"}, 0)
	require.NoError(t, err)
	name, typ := keysOf("cas")
	require.NotNil(t, name, "an insert at version 0 writes its keys")
	require.NotNil(t, typ)
	assert.Equal(t, "alpha", *name)
	assert.Equal(t, "item", *typ)

	_, err = s.PutIfVersion(ctx, mesh.Node{Path: "acme/cas", NodeType: "Item", Name: "Beta"}, created.Version)
	require.NoError(t, err)
	name, _ = keysOf("cas")
	require.NotNil(t, name, "an update at the expected version writes its keys")
	assert.Equal(t, "beta", *name)
	assert.Len(t, initialOf(t, s, "namespace:acme name:beta").Items, 1)
}
