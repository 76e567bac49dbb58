package sqlgen

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// dbBudget bounds everything one test does with its database.
const dbBudget = 2 * time.Minute

// openDB returns a pool on a fresh database, and a context bounded by
// dbBudget for the test's database work.
func openDB(t *testing.T) (context.Context, *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), dbBudget)
	t.Cleanup(cancel)
	cfg, err := pgxpool.ParseConfig(pg.Database(t))
	require.NoError(t, err)
	// A statement with a content condition carries a recursive walk whose
	// planner estimate crosses jit_above_cost on these tables; JIT-compiling
	// it takes most of a second while running it takes milliseconds. The
	// store is told to run its reads with jit off for the same reason (see
	// the package documentation); results do not depend on it.
	cfg.ConnConfig.RuntimeParams["jit"] = "off"
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return ctx, db
}

// nodeTableDDL is the shape of every node table, as the task and pgstore
// define it.
const nodeTableDDL = `(
	namespace     TEXT NOT NULL DEFAULT '',
	id            TEXT NOT NULL,
	path          TEXT GENERATED ALWAYS AS (CASE WHEN namespace = '' THEN id ELSE namespace || '/' || id END) STORED,
	name          TEXT,
	node_type     TEXT,
	main_node     TEXT,
	content       JSONB,
	version       BIGINT NOT NULL DEFAULT 0,
	state         SMALLINT NOT NULL DEFAULT 0,
	last_modified TIMESTAMPTZ NOT NULL DEFAULT now(),
	ns_key        TEXT COLLATE "C",
	id_key        TEXT COLLATE "C",
	path_key      TEXT COLLATE "C",
	name_key      TEXT COLLATE "C",
	type_key      TEXT COLLATE "C",
	main_key      TEXT COLLATE "C",
	PRIMARY KEY (namespace, id),
	CHECK (num_nulls(ns_key, id_key, path_key, name_key, type_key, main_key) IN (0, 6))
)`

// createTables creates schema (if missing) and the given node tables in it.
func createTables(ctx context.Context, t *testing.T, db *pgxpool.Pool, schema string, tables ...string) {
	t.Helper()
	_, err := db.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	for _, table := range tables {
		_, err := db.Exec(ctx, "CREATE TABLE "+pgx.Identifier{schema, table}.Sanitize()+" "+nodeTableDDL)
		require.NoError(t, err)
	}
}

// row is one stored node as the test writes it: nullable columns are
// pointers, content is raw JSON (nil for SQL NULL).
type row struct {
	schema, table         string
	namespace, id         string
	name, nodeType, owner *string
	content               *string
	version               int64
	state                 int16
	modified              time.Time
}

func (r row) path() string { return mesh.JoinPath(r.namespace, r.id) }

func insertRows(ctx context.Context, t *testing.T, db *pgxpool.Pool, rows []row) {
	insertRowsKeyed(ctx, t, db, rows, func(int) bool { return true })
}

// insertRowsKeyed inserts rows, filling the folded keys of row i when
// keyed(i) holds and leaving them NULL (as before the backfill) otherwise.
func insertRowsKeyed(ctx context.Context, t *testing.T, db *pgxpool.Pool, rows []row, keyed func(i int) bool) {
	t.Helper()
	batch := &pgx.Batch{}
	for i, r := range rows {
		keys := make([]any, 6)
		if keyed(i) {
			keys = KeysOf(r.namespace, r.id, deref(r.name), deref(r.nodeType), deref(r.owner)).Values()
		}
		batch.Queue("INSERT INTO "+pgx.Identifier{r.schema, r.table}.Sanitize()+
			" (namespace, id, name, node_type, main_node, content, version, state, last_modified, "+KeyColumns+")"+
			" VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
			append([]any{r.namespace, r.id, r.name, r.nodeType, r.owner, r.content, r.version, r.state, r.modified}, keys...)...)
	}
	require.NoError(t, db.SendBatch(ctx, batch).Close())
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// readAll reads every row of table in schema through ScanNode: the nodes as
// the database hands them back (jsonb normalises content), which is what
// mesh's matching must be compared on.
func readAll(ctx context.Context, t *testing.T, db *pgxpool.Pool, schema, table string) []mesh.Node {
	t.Helper()
	nodes, err := query(ctx, db, "SELECT "+Columns+" FROM "+pgx.Identifier{schema, table}.Sanitize())
	require.NoError(t, err)
	return nodes
}

// query runs sql and scans every row with ScanNode.
func query(ctx context.Context, db *pgxpool.Pool, sql string, args ...any) ([]mesh.Node, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var nodes []mesh.Node
	for rows.Next() {
		n, err := ScanNode(rows)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w\nSQL: %s", err, sql)
	}
	return nodes, nil
}

func paths(nodes []mesh.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Path
	}
	return out
}

func ptr[T any](v T) *T { return &v }
