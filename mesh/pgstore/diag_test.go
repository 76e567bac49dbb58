package pgstore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// locksHeld calls s.LocksHeld within testBudget.
func locksHeld(t *testing.T, s *Store, q string) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	return s.LocksHeld(ctx, q)
}

// relationsOf counts, from the catalog, the given tables of the given
// schemas and their indexes: what the planner opens to read them.
func relationsOf(t *testing.T, url string, schemas, tables []string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	require.NoError(t, conn.QueryRow(ctx, `
		SELECT count(*) + coalesce(sum((SELECT count(*) FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid)), 0)
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace
		WHERE ns.nspname = ANY($1) AND c.relname = ANY($2) AND c.relkind = 'r'`, schemas, tables).Scan(&n))
	return n
}

func TestLocksHeldCountsEveryTableTheReadOpensAndItsIndexes(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	s := openStore(t, url, Options{})
	parts := []string{"alpha", "beta", "gamma"}
	for _, p := range parts {
		put(t, s, mesh.Node{Path: p + "/item1", NodeType: "Item"})
		put(t, s, mesh.Node{Path: p + "/note1", NodeType: "Note"})
	}

	pinned, err := locksHeld(t, s, "namespace:alpha nodeType:Item")
	require.NoError(t, err)
	assert.Equal(t, relationsOf(t, url, []string{"alpha"}, []string{NodesTable}), pinned,
		"a pinned read opens its partition's mesh_nodes and that table's indexes, nothing else")
	assert.LessOrEqual(t, pinned, 16, "a pinned read fits in a backend's 16 fast-path lock slots")

	fanOut, err := locksHeld(t, s, "nodeType:Item partitions:all")
	require.NoError(t, err)
	assert.Equal(t, relationsOf(t, url, parts, []string{NodesTable}), fanOut,
		"a fan-out over N partitions opens the N tables an Item is in, with their indexes: not 5N")

	// An Item stored in a satellite table makes that table one an Item
	// can be in: the fan-out reads it too, and finds the node.
	put(t, s, mesh.Node{Path: "beta/item1/_Thread/t1", NodeType: "item"})
	fanOut, err = locksHeld(t, s, "nodeType:Item partitions:all")
	require.NoError(t, err)
	assert.Equal(t, relationsOf(t, url, parts, []string{NodesTable, "threads"}), fanOut,
		"the threads tables are read once an Item is stored in one")
	assert.Contains(t, pathsOf(initialOf(t, s, "nodeType:Item partitions:all").Items), "beta/item1/_Thread/t1")

	// Control: a query that reads nothing counts nothing, so the numbers
	// above are the read's locks and not the counting statement's own.
	none, err := locksHeld(t, s, "path:_Nowhere/x")
	require.NoError(t, err)
	assert.Zero(t, none)
}

func TestAFanOutsLocksGrowWithThePartitionsWhileAPinnedReadsStayPut(t *testing.T) {
	t.Parallel()
	s := openStore(t, pg.Database(t), Options{})
	put(t, s, mesh.Node{Path: "p0/item", NodeType: "Item"})
	pinnedOne, err := locksHeld(t, s, "namespace:p0 nodeType:Item")
	require.NoError(t, err)
	fanOutOne, err := locksHeld(t, s, "nodeType:Item partitions:all")
	require.NoError(t, err)

	for _, p := range []string{"p1", "p2", "p3"} {
		put(t, s, mesh.Node{Path: p + "/item", NodeType: "Item"})
	}
	pinnedFour, err := locksHeld(t, s, "namespace:p0 nodeType:Item")
	require.NoError(t, err)
	fanOutFour, err := locksHeld(t, s, "nodeType:Item partitions:all")
	require.NoError(t, err)

	assert.Equal(t, pinnedOne, pinnedFour, "a pinned read does not see the other partitions")
	assert.Equal(t, 4*fanOutOne, fanOutFour, "each partition adds the same tables and indexes to a fan-out")
	assert.Equal(t, pinnedOne, fanOutOne, "over one partition, a typed fan-out reads what the pinned read reads: one table")
	assert.LessOrEqual(t, pinnedOne, 16, "a typed read of one table fits a backend's 16 fast-path lock slots")

	// Control: without a known node type the fan-out reads every node
	// table of every partition, as it did before type routing.
	untyped, err := locksHeld(t, s, "nodeType:Item* partitions:all")
	require.NoError(t, err)
	assert.Greater(t, untyped, 4*fanOutFour, "an untyped fan-out over four partitions reads all 20 node tables")
}

func TestLocksHeldRunsTheStatementTheQueryRuns(t *testing.T) {
	t.Parallel()
	trace := &statements{}
	s := openStore(t, pg.Database(t), Options{QueryTracer: trace})
	for _, p := range []string{"alpha", "beta"} {
		put(t, s, mesh.Node{Path: p + "/item1", NodeType: "Item"})
	}
	for _, q := range []string{"namespace:alpha nodeType:Item", "nodeType:Item partitions:all"} {
		trace.take()
		initialOf(t, s, q)
		read := trace.take()
		require.Len(t, read, 1, "query %s reads with one statement", q)

		_, err := locksHeld(t, s, q)
		require.NoError(t, err)
		diag := trace.take()
		assert.Contains(t, diag, read[0], "query %s: LocksHeld runs the statement of the Initial read", q)
	}

	// Control: another partition's read is another statement, so the
	// comparison above can tell statements apart.
	initialOf(t, s, "namespace:alpha nodeType:Item")
	alpha := trace.take()
	_, err := locksHeld(t, s, "namespace:beta nodeType:Item")
	require.NoError(t, err)
	assert.NotContains(t, trace.take(), alpha[0])
}

// relationLocksElsewhere counts the relation locks on the database's own
// tables held by sessions other than conn's. System catalogs are left out:
// the store's listener reads pg_stat_activity (a view over the catalogs)
// when a notice comes from a backend it has not seen, and the put above
// sends one, so it may hold catalog locks as the observer looks.
func relationLocksElsewhere(t *testing.T, ctx context.Context, conn *pgx.Conn) int {
	t.Helper()
	var n int
	var held string
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*), coalesce(string_agg(l.relation::regclass::text || ' ' || l.mode, ', '), '') FROM pg_catalog.pg_locks l
		WHERE l.locktype = 'relation' AND l.pid <> pg_backend_pid()
		  AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
		  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c
		      WHERE c.oid = l.relation AND c.relnamespace = 'pg_catalog'::regnamespace)`).Scan(&n, &held))
	if n > 0 {
		t.Logf("relation locks held by other sessions: %s", held)
	}
	return n
}

func TestLocksHeldLeavesNoLockBehind(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	// Migrated by the deploy step and opened with SkipMigrate, so that no
	// background backfill runs: the observer counts every other backend's
	// relation locks, and a backfill that started late on a loaded machine
	// (building indexes, folding rows) held some as it looked.
	require.NoError(t, MigrateURL(ctx, url))
	s := openStore(t, url, Options{SkipMigrate: true})
	put(t, s, mesh.Node{Path: "alpha/item1", NodeType: "Item"})
	observer, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer observer.Close(context.WithoutCancel(ctx))

	n, err := s.LocksHeld(ctx, "nodeType:Item partitions:all")
	require.NoError(t, err)
	require.Positive(t, n)
	assert.Zero(t, relationLocksElsewhere(t, ctx, observer), "the transaction was rolled back and its locks released")

	// Control: a transaction left open after the same read is visible to
	// the observer, so a LocksHeld that did not roll back would fail above.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	require.NoError(t, err)
	defer tx.Rollback(context.WithoutCancel(ctx))
	_, err = tx.Exec(ctx, `SELECT count(*) FROM "alpha"."mesh_nodes"`)
	require.NoError(t, err)
	assert.Positive(t, relationLocksElsewhere(t, ctx, observer))
}

func TestLocksHeldRefusesWhatQueryRefusesWithTheSameTypedErrors(t *testing.T) {
	t.Parallel()
	s := openStore(t, pg.Database(t), Options{})
	put(t, s, mesh.Node{Path: "alpha/item1", NodeType: "Item"})

	_, err := locksHeld(t, s, "nodeType:(Item")
	var parseErr *mesh.ParseError
	assert.ErrorAs(t, err, &parseErr, "a query that does not parse")

	_, err = locksHeld(t, s, "nodeType:Item")
	var unanchored *mesh.UnanchoredQueryError
	assert.ErrorAs(t, err, &unanchored, "a fan-out that does not declare partitions:all")

	// Control: the same fan-out declared is counted.
	n, err := locksHeld(t, s, "nodeType:Item partitions:all")
	require.NoError(t, err)
	assert.Positive(t, n)

	require.NoError(t, s.Close())
	_, err = locksHeld(t, s, "namespace:alpha")
	var unavailable *mesh.UnavailableError
	assert.ErrorAs(t, err, &unavailable, "a closed store cannot say")
	assert.ErrorIs(t, err, ErrClosed)
	assert.Contains(t, err.Error(), mustParse(t, "namespace:alpha").String(), "the error names the query")
}

func TestANodeTypeFirstStoredInASatelliteByAnotherProcessReachesTypedReads(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	writer := openStore(t, url, Options{}) // another process on the database
	put(t, writer, mesh.Node{Path: "acme/item1", NodeType: "Item"})
	put(t, writer, mesh.Node{Path: "beta/item1", NodeType: "Item"})
	reader := openStore(t, url, Options{}) // knows both partitions from Open

	live := watchQuery(t, reader, "nodeType:Item partitions:all")
	live.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial && len(c.Items) == 2 })
	locks, err := locksHeld(t, reader, "nodeType:Item partitions:all")
	require.NoError(t, err)
	assert.Equal(t, relationsOf(t, url, []string{"acme", "beta"}, []string{NodesTable}), locks, "before: mesh_nodes only")

	// The first Item ever stored in a notifications table, by the other
	// store: the reader learns it from the change notice, so the live query
	// adds it and later reads include that table.
	put(t, writer, mesh.Node{Path: "beta/item1/_Notification/n1", NodeType: "ITEM"})
	live.await(t, "the satellite Item", kindOn(mesh.Added, "beta/item1/_Notification/n1"))
	assert.Contains(t, pathsOf(initialOf(t, reader, "nodeType:Item partitions:all").Items), "beta/item1/_Notification/n1")
	locks, err = locksHeld(t, reader, "nodeType:Item partitions:all")
	require.NoError(t, err)
	assert.Equal(t, relationsOf(t, url, []string{"acme", "beta"}, []string{NodesTable, "notifications"}), locks,
		"after: the notifications tables too")

	// A store opened now loads the registry: it reads the satellite too.
	fresh := openStore(t, url, Options{})
	assert.Contains(t, pathsOf(initialOf(t, fresh, "nodeType:item partitions:all").Items), "beta/item1/_Notification/n1")
}
