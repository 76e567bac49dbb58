package sqlgen

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

func TestScanNodeReadsARowAsTheNodeThatWasStored(t *testing.T) {
	ctx, db := openDB(t)
	createTables(ctx, t, db, "acme", mesh.NodesTable)
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	insertRows(ctx, t, db, []row{
		{schema: "acme", table: mesh.NodesTable, namespace: "Acme/Docs", id: "a", name: ptr("Alpha"),
			nodeType: ptr("Article"), owner: ptr("Acme/Docs/a"), content: ptr(`{"x": [1, "y"]}`), version: 7, state: 2, modified: at},
		{schema: "acme", table: mesh.NodesTable, namespace: "", id: "Acme", modified: at},
	})
	nodes := readAll(ctx, t, db, "acme", mesh.NodesTable)
	require.Len(t, nodes, 2)
	byPath := map[string]mesh.Node{}
	for _, n := range nodes {
		byPath[n.Path] = n
	}
	a := byPath["Acme/Docs/a"]
	assert.Equal(t, mesh.Node{ID: "a", Namespace: "Acme/Docs", Path: "Acme/Docs/a", NodeType: "Article", Name: "Alpha",
		MainNode: "Acme/Docs/a", Content: json.RawMessage(`{"x": [1, "y"]}`), Version: 7, State: mesh.StateTransient,
		LastModified: a.LastModified}, a)
	assert.True(t, at.Equal(a.LastModified))
	root := byPath["Acme"]
	assert.Equal(t, "", root.Name, "NULL reads as empty")
	assert.Nil(t, root.Content, "NULL content reads as none")
	_, err := root.Normalize()
	assert.NoError(t, err, "a scanned node is a valid node")
}

func TestScanNodeRefusesRowsMeshCannotHold(t *testing.T) {
	ctx, db := openDB(t)
	createTables(ctx, t, db, "acme", mesh.NodesTable)
	cases := []struct {
		insert string
		column string
	}{
		{`INSERT INTO acme.mesh_nodes (namespace, id) VALUES ('', 'a/b')`, "id"},
		{`INSERT INTO acme.mesh_nodes (namespace, id, state) VALUES ('', 'seven', 7)`, "state"},
		{`INSERT INTO acme.mesh_nodes (namespace, id, state) VALUES ('', 'minus', -1)`, "state"},
		{`INSERT INTO acme.mesh_nodes (namespace, id, last_modified) VALUES ('', 'inf', 'infinity')`, "last_modified"},
	}
	for _, c := range cases {
		t.Run(c.column, func(t *testing.T) {
			_, err := db.Exec(ctx, "TRUNCATE acme.mesh_nodes")
			require.NoError(t, err)
			_, err = db.Exec(ctx, c.insert)
			require.NoError(t, err)
			_, err = ScanNode(db.QueryRow(ctx, "SELECT "+Columns+" FROM acme.mesh_nodes"))
			var se *ScanError
			require.True(t, errors.As(err, &se), "got %v", err)
			assert.Equal(t, c.column, se.Column)
			assert.NotEmpty(t, se.Path)
		})
	}
	// Negative control: the driver's own failure (no row) is wrapped, not
	// mistaken for a bad column.
	_, err := db.Exec(ctx, "TRUNCATE acme.mesh_nodes")
	require.NoError(t, err)
	_, err = ScanNode(db.QueryRow(ctx, "SELECT "+Columns+" FROM acme.mesh_nodes"))
	var se *ScanError
	require.True(t, errors.As(err, &se))
	assert.Empty(t, se.Column)
	assert.True(t, errors.Is(err, pgx.ErrNoRows))
}

func TestLastModifiedTextInSQLIsGosRFC3339NanoText(t *testing.T) {
	ctx, db := openDB(t)
	times := []time.Time{
		time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		time.Date(2024, 1, 2, 3, 4, 5, 120000000, time.UTC),
		time.Date(2024, 1, 2, 3, 4, 5, 1000, time.UTC),
		time.Date(2024, 1, 2, 3, 4, 5, 999999000, time.FixedZone("x", 5*3600)),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 500000000, time.UTC),
		time.Date(-4712, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(999, 3, 4, 5, 6, 7, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(123456, 7, 8, 9, 10, 11, 0, time.UTC),
	}
	for _, tm := range times {
		var got string
		require.NoError(t, db.QueryRow(ctx, "SELECT "+goTimeText("$1::timestamptz"), tm).Scan(&got))
		assert.Equal(t, tm.UTC().Format(time.RFC3339Nano), got, "%v", tm)
	}
	// Negative control: PostgreSQL's own rendering differs from Go's.
	var pgText string
	require.NoError(t, db.QueryRow(ctx, "SELECT to_char($1::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
		times[4]).Scan(&pgText))
	assert.NotEqual(t, times[4].Format(time.RFC3339Nano), pgText)
}
