package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// trusting writes marker nodes from writer until one's frame on w's query
// on reader is made without a point read: the query's fence, sent after
// its Initial and before the Initial was delivered, precedes the marker,
// and the reader has looked up the role of the writer's backend (its
// first notices are not believed until then, see senders.go). (Each
// attempt is bounded by testBudget, and so are the attempts together.)
func trusting(t *testing.T, reader, writer *Store, w *watch[mesh.Change], ns string) {
	t.Helper()
	deadline := time.Now().Add(testBudget)
	call := len(w.values(t)) // a later call's markers are new paths, not ones w has frames of
	for i := 0; time.Now().Before(deadline); i++ {
		before := reader.Stats().PointReads
		path := fmt.Sprintf("%s/marker%d-%d", ns, call, i)
		put(t, writer, mesh.Node{Path: path, NodeType: "Article"})
		w.await(t, "Added "+path, kindOn(mesh.Added, path))
		if reader.Stats().PointReads == before {
			return
		}
	}
	t.Fatalf("waiting (at most %s) for a write whose row is trusted: each needed a point read", testBudget)
}

// inUTC returns n with its time in time.UTC's representation: reads of
// a query and of a path scan times into equal instants in different
// *time.Location values.
func inUTC(n mesh.Node) mesh.Node {
	n.LastModified = n.LastModified.UTC()
	return n
}

// The frame a live query builds from a notice's row is the frame a read
// would have given: the same node, field for field (content as PostgreSQL
// returns jsonb, the time in UTC, absent content nil), for an insert, an
// update and a delete, and no point read is made for any of them.
// Negative control: before notices carried rows (and with the fence never
// arriving) every one of these writes costs a point read, so the
// PointReads assertions fail.
func TestAFrameFromANoticesRowEqualsTheFrameFromARead(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	reader, writer := openStore(t, url, Options{}), openStore(t, url, Options{})
	const ns = "acme/Rows"
	put(t, writer, mesh.Node{Path: ns + "/seed", NodeType: "Article"})
	w := watchQuery(t, reader, "namespace:"+ns+" nodeType:Article")
	w.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	trusting(t, reader, writer, w, ns)

	before := reader.Stats()
	full := mesh.Node{Path: ns + "/full", NodeType: "Article", Name: "Ünïcode \"name\"", MainNode: "acme/Rows/seed",
		State: 3, Content: json.RawMessage(`{"b":[1,2.50,"x\u00e9"],"a":{"nested":true},"n":null}`)}
	bare := mesh.Node{Path: ns + "/bare", NodeType: "Article"} // no content: SQL NULL
	for _, n := range []mesh.Node{full, bare} {
		stored := put(t, writer, n)
		added := w.await(t, "Added "+n.Path, kindOn(mesh.Added, n.Path))
		read := initialOf(t, reader, "path:"+n.Path)
		require.Len(t, read.Items, 1)
		assert.Equal(t, inUTC(read.Items[0]), inUTC(added.Items[0]), "the row from the notice is the node a read returns")
		assert.Equal(t, stored.Version, added.Items[0].Version)
	}
	assert.Nil(t, w.await(t, "Added bare", kindOn(mesh.Added, bare.Path)).Items[0].Content)

	full.Content = json.RawMessage(`{"b":2}`)
	put(t, writer, full)
	updated := w.await(t, "Updated full", kindOn(mesh.Updated, full.Path))
	read := initialOf(t, reader, "path:"+full.Path)
	assert.Equal(t, inUTC(read.Items[0]), inUTC(updated.Items[0]))

	del(t, writer, full.Path)
	w.await(t, "Removed full", kindOn(mesh.Removed, full.Path))

	after := reader.Stats()
	assert.Equal(t, before.PointReads, after.PointReads, "no written path was read back")
	assert.EqualValues(t, 4, after.NoticeRows-before.NoticeRows, "two inserts, an update and a delete settled from their notices")
}

// A row too large for NOTIFY's payload is left out of the notice; the live
// query reads the path instead and sends the same frame. (The control is
// the test above: the same setup with a small row makes no point read.)
func TestANoticeWithoutItsRowIsSettledByAReadWithTheSameFrame(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	reader, writer := openStore(t, url, Options{}), openStore(t, url, Options{})
	const ns = "acme/Big"
	put(t, writer, mesh.Node{Path: ns + "/seed", NodeType: "Article"})
	w := watchQuery(t, reader, "namespace:"+ns+" nodeType:Article")
	w.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	trusting(t, reader, writer, w, ns)

	before := reader.Stats()
	big := mesh.Node{Path: ns + "/big", NodeType: "Article", Content: json.RawMessage(`{"text":"` + strings.Repeat("x", 9000) + `"}`)}
	put(t, writer, big)
	added := w.await(t, "Added big", kindOn(mesh.Added, big.Path))
	read := initialOf(t, reader, "path:"+big.Path)
	assert.Equal(t, inUTC(read.Items[0]), inUTC(added.Items[0]))
	after := reader.Stats()
	assert.Greater(t, after.PointReads, before.PointReads, "the path was read back")
	assert.Equal(t, before.NoticeRows, after.NoticeRows, "no row came with the notice")
}

// A notice's row is applied only once the listener has received the fence
// the live query was given after its last read ended: a read may have seen
// a commit later than the notice's, and applying the older row would take
// the result back. While a read is due and until its fence arrives, the
// path is read instead.
func TestANoticesRowIsTrustedOnlyAfterTheQuerysFence(t *testing.T) {
	q, err := mesh.Parse("namespace:a/b")
	require.NoError(t, err)
	lq := newLiveQuery(q, planFor(q, mesh.Reach{Schemas: []string{"p_a"}}))
	f := newFences()
	row := &written{carried: true, node: mesh.Node{Path: "a/b/c", Namespace: "a/b", ID: "c"}}
	carried := func() bool {
		_, paths, _ := lq.take()
		require.Len(t, paths, 1)
		return paths[0].carried
	}
	fenceAfterRead := func() int64 { // what Store.fenceAfterRead does, without sending
		n := f.request()
		lq.fence = n
		f.mu.Lock()
		f.next++ // the fence goroutine took n
		f.mu.Unlock()
		return n
	}

	lq.take() // the Initial: a read
	lq.owe(pendingDiff, "a/b/c", row, f.seen.Load(), noNotice)
	assert.False(t, carried(), "no fence after the read yet: read the path")
	first := fenceAfterRead() // after that point read
	lq.owe(pendingDiff, "a/b/c", row, f.seen.Load(), noNotice)
	assert.False(t, carried(), "the fence has not arrived: read the path")

	second := fenceAfterRead() // after that read
	f.received(strconv.FormatInt(first, 10))
	lq.owe(pendingDiff, "a/b/c", row, f.seen.Load(), noNotice)
	assert.False(t, carried(), "a fence sent before the latest read ended does not vouch for it")

	third := fenceAfterRead()
	f.received("not a fence")
	f.received(strconv.FormatInt(third, 10))
	f.received(strconv.FormatInt(second, 10)) // late and lower: the highest stands
	lq.owe(pendingDiff, "a/b/c", row, f.seen.Load(), noNotice)
	assert.True(t, carried(), "after its fence the row stands (control: the same row as above)")

	lq.owe(pendingDiff, "a/b/c", row, f.seen.Load(), noNotice)
	lq.owe(pendingDiff, "a/b/c", nil, f.seen.Load(), noNotice) // a later notice without a row
	assert.False(t, carried(), "the latest notice of a path decides: this one must be read")
	lq.owe(pendingDiff, "a/b/c", row, f.seen.Load(), noNotice)
	assert.False(t, carried(), "that read needs a new fence before rows are trusted again")
}

// Any role that can connect to the database can NOTIFY, so a row in a
// notice is believed only from a backend running as the store's own role:
// a forged row from another role makes the query read the path (where
// nothing is), and no frame carries it. Control: the same forged notice
// sent as the store's own role is applied, so it is the sender's role
// that keeps the first one out.
func TestARowInANoticeFromAnotherRoleIsNotBelieved(t *testing.T) {
	t.Parallel()
	dbURL := pg.Database(t)
	reader, writer := openStore(t, dbURL, Options{}), openStore(t, dbURL, Options{})
	const ns = "acme/Forged"
	put(t, writer, mesh.Node{Path: ns + "/seed", NodeType: "Article"})
	w := watchQuery(t, reader, "namespace:"+ns+" nodeType:Article")
	w.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	trusting(t, reader, writer, w, ns)

	ctx, cancel := context.WithTimeout(t.Context(), testBudget)
	defer cancel()
	admin, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	role := fmt.Sprintf("forger_%d", time.Now().UnixNano())
	_, err = admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testBudget)
		defer cancel()
		_, err := admin.Exec(ctx, "DROP ROLE "+role)
		assert.NoError(t, err)
	})
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	u.User = url.User(role)

	// The forger's connection stays open until the test ends, so that
	// the listener finds its backend and its role. Each forged notice is
	// followed by a write of the store's, whose frame comes no earlier
	// than one the forged notice would make: the role of a new backend is
	// looked up off the listener, and its notices are not believed until
	// the answer is in, so they are sent until one is applied or one was
	// sent after the reader had its answer, for at most testBudget.
	forge := func(connURL, id string) (applied bool) {
		conn, err := pgx.Connect(ctx, connURL)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		deadline := time.Now().Add(testBudget)
		for i := 0; time.Now().Before(deadline); i++ {
			answered := reader.senders.answered(conn.PgConn().PID())
			path := fmt.Sprintf("%s/%s%d", ns, id, i)
			payload := fmt.Sprintf(`{"path":%q,"op":"INSERT","node_type":"Article","n":1,"row":{"namespace":%q,"id":"%s%d","path":%q,`+
				`"name":null,"node_type":"Article","main_node":null,"content":{"forged":true},"content_null":false,"version":1,`+
				`"state":0,"last_modified":"2026-01-01T00:00:00+00:00"}}`, path, ns, id, i, path)
			_, err = conn.Exec(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, payload)
			require.NoError(t, err)
			after := fmt.Sprintf("%s/after-%s%d", ns, id, i)
			put(t, writer, mesh.Node{Path: after, NodeType: "Article"})
			w.await(t, "Added "+after, kindOn(mesh.Added, after))
			for _, c := range w.values(t) {
				if k := slices.Index(pathsOf(c.Items), path); k >= 0 {
					assert.JSONEq(t, `{"forged":true}`, string(c.Items[k].Content))
					return true
				}
			}
			if answered {
				return false
			}
		}
		t.Fatalf("waiting (at most %s) for the reader to look up the role of the forger's backend", testBudget)
		return false
	}

	assert.False(t, forge(u.String(), "other"), "a frame carried another role's forged row")
	assert.True(t, forge(dbURL, "same"), "the row sent as the store's own role is applied")
}

// answered reports whether the reader's cache of senders holds an answer
// for pid.
func (c *senders) answered(pid uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.known[pid]
	return ok
}
