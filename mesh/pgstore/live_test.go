package pgstore

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestTwoReplicasSeeEachOthersWrites(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	a, b := openStore(t, url, Options{}), openStore(t, url, Options{})
	const q = "namespace:acme/Docs nodeType:Article"
	put(t, a, mesh.Node{Path: "acme/Docs/seed", NodeType: "Article"})
	onA, onB := watchQuery(t, a, q), watchQuery(t, b, q)
	for _, w := range []*watch[mesh.Change]{onA, onB} {
		initial := w.await(t, "the Initial", func(c mesh.Change) bool { return true })
		require.Equal(t, mesh.Initial, initial.Kind)
		assert.Equal(t, []string{"acme/Docs/seed"}, pathsOf(initial.Items))
	}

	for _, step := range []struct {
		writer *Store
		name   string
	}{{b, "b"}, {a, "a"}} {
		path := "acme/Docs/from-" + step.name
		stored := put(t, step.writer, mesh.Node{Path: path, NodeType: "Article"})
		for _, w := range []*watch[mesh.Change]{onA, onB} {
			added := w.await(t, "Added "+path, kindOn(mesh.Added, path))
			assert.Equal(t, stored, added.Items[0], "every replica, the writer included, sees the stored node")
		}
		changed := put(t, step.writer, mesh.Node{Path: path, NodeType: "Article", Content: json.RawMessage(`{"v": 2}`)})
		for _, w := range []*watch[mesh.Change]{onA, onB} {
			updated := w.await(t, "Updated "+path, kindOn(mesh.Updated, path))
			assert.Equal(t, changed.Version, updated.Items[0].Version)
		}
		del(t, step.writer, path)
		for _, w := range []*watch[mesh.Change]{onA, onB} {
			w.await(t, "Removed "+path, kindOn(mesh.Removed, path))
		}
	}
}

func TestAnUnrelatedTypeWriteFromAnotherReplicaReRunsNoLiveQuery(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	reader := openStore(t, url, Options{})
	writer := openStore(t, url, Options{})
	changes := watchStream(t, "changes", reader.Changes())
	put(t, writer, mesh.Node{Path: "acme/Docs/a", NodeType: "Article"})
	changes.await(t, "the notice of acme/Docs/a", noticeOf("acme/Docs/a"))

	const queries, writes = 20, 10
	for range queries {
		w := watchQuery(t, reader, "namespace:acme/Docs nodeType:Article")
		w.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	}
	paths := make([]string, writes)
	for i := range paths {
		paths[i] = "acme/Docs/p" + string(rune('a'+i))
	}
	// Notices are handled in commit order, each before it is announced: once
	// the marker is announced, every notice before it has been settled.
	settle := func(marker string) {
		put(t, writer, mesh.Node{Path: marker, NodeType: "Page"})
		changes.await(t, "the marker's notice", noticeOf(marker))
	}

	before := reader.Stats()
	for _, p := range paths {
		put(t, writer, mesh.Node{Path: p, NodeType: "Page"})
	}
	settle("acme/Docs/marker")
	notices := int64(writes + 1)
	got := reader.Stats()
	assert.Equal(t, int64(0), got.Requeries-before.Requeries, "a Page write cannot change an Article query: no re-query")
	assert.Equal(t, int64(0), got.Reads-before.Reads+got.PointReads-before.PointReads, "and no read")
	assert.Equal(t, queries*notices, got.Skipped-before.Skipped, "every (notice, query) pair was settled by type")

	// Negative control: the same writes announced without their node type
	// (the pre-fix payload, or a writer the triggers do not cover), on the
	// public channel, re-run every live query once per notice.
	conn := connect(t, url)
	before = reader.Stats()
	for _, p := range paths {
		_, err := conn.Exec(testContext(t), `SELECT pg_notify($1, $2)`, NotifyChannel, `{"path": "`+p+`", "op": "UPDATE"}`)
		require.NoError(t, err)
	}
	settle("acme/Docs/marker2")
	got = reader.Stats()
	assert.Equal(t, int64(queries*writes), got.Requeries-before.Requeries,
		"without the node type, every write re-runs every live query: the multiplier")
	assert.Equal(t, int64(queries), got.Skipped-before.Skipped, "only the typed marker is skipped")
}

func TestAChangeOfNodeTypeReachesQueriesOfTheOldAndTheNewType(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	reader, writer := openStore(t, url, Options{}), openStore(t, url, Options{})
	put(t, writer, mesh.Node{Path: "acme/Docs/x", NodeType: "Article"})
	articles := watchQuery(t, reader, "namespace:acme/Docs nodeType:Article")
	pages := watchQuery(t, reader, "namespace:acme/Docs nodeType:Page")
	changes := watchStream(t, "changes", reader.Changes())
	articles.await(t, "Initial with x", kindOn(mesh.Initial, "acme/Docs/x"))
	pages.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })

	put(t, writer, mesh.Node{Path: "acme/Docs/x", NodeType: "Page"})
	// Classified by the new type alone, the Article query would skip this
	// write and keep x for ever; the notice is untyped so both look.
	notice := changes.await(t, "the notice of the type change", func(n mesh.ChangeNotice) bool {
		return n.Path == "acme/Docs/x" && n.Op == mesh.WriteUpdate
	})
	assert.Equal(t, "", notice.NodeType)
	articles.await(t, "Removed x", kindOn(mesh.Removed, "acme/Docs/x"))
	pages.await(t, "Added x", kindOn(mesh.Added, "acme/Docs/x"))
}

func TestAnUnreadableNoticeReRunsEveryLiveQuery(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	s := openStore(t, url, Options{})
	changes := watchStream(t, "changes", s.Changes())
	put(t, s, mesh.Node{Path: "acme/Docs/a", NodeType: "Article"})
	changes.await(t, "the notice of acme/Docs/a", noticeOf("acme/Docs/a"))
	const queries = 3
	for range queries {
		w := watchQuery(t, s, "namespace:acme/Docs nodeType:Article")
		w.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	}
	before := s.Stats()

	conn := connect(t, url)
	for _, payload := range []string{`not json`, `{"op": "INSERT"}`, `{"path": "acme/Docs/q", "op": "MERGE"}`} {
		_, err := conn.Exec(testContext(t), `SELECT pg_notify($1, $2)`, NotifyChannel, payload)
		require.NoError(t, err)
	}
	// Control: a readable notice of another type is skipped. It also marks
	// the end, as notices are handled in order.
	put(t, s, mesh.Node{Path: "acme/Docs/marker", NodeType: "Page"})
	changes.await(t, "the marker's notice", noticeOf("acme/Docs/marker"))

	got := s.Stats()
	assert.Equal(t, int64(3*queries), got.Requeries-before.Requeries, "each unreadable notice re-runs every live query (fail-safe)")
	assert.Equal(t, int64(queries), got.Skipped-before.Skipped)
	for _, n := range changes.values(t) {
		assert.NotEmpty(t, n.Path, "an unreadable notice is not announced: %+v", n)
	}
}

// listenerPID returns the backend pid of the store's listener on its
// database (the only store on it).
func listenerPID(t *testing.T, url string) uint32 {
	t.Helper()
	pids := queryStrings(t, connect(t, url),
		`SELECT pid::text FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, listenerAppName)
	require.Len(t, pids, 1, "one listener connection per store")
	pid, err := strconv.ParseUint(pids[0], 10, 32)
	require.NoError(t, err)
	return uint32(pid)
}

func TestAListenerReconnectSendsResetNotASilentGap(t *testing.T) {
	t.Parallel()
	clk := rxtest.NewClock()
	url := pg.Database(t)
	s := openStore(t, url, Options{Clock: clk})
	feed := watchStream(t, "feed", s.Feed())
	changes := watchStream(t, "changes", s.Changes())
	put(t, s, mesh.Node{Path: "acme/Docs/a", NodeType: "Article"})
	changes.await(t, "the notice of acme/Docs/a", noticeOf("acme/Docs/a"))
	live := watchQuery(t, s, "namespace:acme/Docs nodeType:Article")
	live.await(t, "Initial with a", kindOn(mesh.Initial, "acme/Docs/a"))

	terminate(t, url, listenerPID(t, url)) // the listener's backend has exited
	down := feed.await(t, "the feed to go down", func(f FeedState) bool { return !f.Connected })
	assert.Error(t, down.Err, "the state says why the feed is down")
	assert.Equal(t, MinReconnectDelay, down.RetryIn)
	// FeedDown says it as a typed error, unwrapping to the cause. Negative
	// control (run): FeedDown sending the cause itself, errors.As failed.
	why := watchStream(t, "feed down", s.FeedDown())
	last := why.await(t, "FeedDown's current state", func(error) bool { return true })
	var fd *FeedDownError
	if assert.ErrorAs(t, last, &fd, "FeedDown while the feed is down") {
		assert.Equal(t, MinReconnectDelay, fd.RetryIn)
		assert.ErrorIs(t, last, down.Err, "it unwraps to the cause the feed state names")
		assert.Contains(t, last.Error(), "change feed is down")
	}

	// Written while nobody listens: no notice will ever carry it.
	put(t, s, mesh.Node{Path: "acme/Docs/b", NodeType: "Article"})
	clk.Advance(down.RetryIn)
	reset := live.await(t, "a Reset after the reconnect", func(c mesh.Change) bool { return c.Kind == mesh.Reset })
	assert.Equal(t, []string{"acme/Docs/a", "acme/Docs/b"}, pathsOf(reset.Items), "the Reset holds the write made during the gap")
	up := feed.await(t, "the feed to be back", func(f FeedState) bool { return f.Connected && f.Reconnects == 1 })
	assert.NoError(t, up.Err)

	// Negative control: the gap was real. The write's notice never came
	// (the notice of a later write does), and before the Reset no frame
	// carried it: without the Reset the query would never learn of b.
	put(t, s, mesh.Node{Path: "acme/Docs/c", NodeType: "Article"})
	changes.await(t, "the notice of acme/Docs/c", noticeOf("acme/Docs/c"))
	live.await(t, "Added c", kindOn(mesh.Added, "acme/Docs/c"))
	for _, n := range changes.values(t) {
		assert.NotEqual(t, "acme/Docs/b", n.Path, "a write made while the feed was down is not announced")
	}
	frames := live.values(t)
	for _, c := range frames {
		if c.Kind == mesh.Reset {
			break
		}
		assert.NotContains(t, pathsOf(c.Items), "acme/Docs/b", "before the Reset, %s carried b", c.Kind)
	}
	assert.Equal(t, int64(1), s.Stats().Resets)
}

// A Changes subscriber is told of the writes a listener outage lost, as
// one that fell behind is (memstore never loses one): one gap notice
// (empty Path, anything may have changed) after the reconnect, before the
// notices of later writes. Control run: without the announcement on
// reconnect (before the fix) the wait for the gap notice ran out with
// only the notices of acme/Docs/a and acme/Docs/c received.
func TestAChangesSubscriberIsToldOfTheWritesAListenerOutageLost(t *testing.T) {
	t.Parallel()
	clk := rxtest.NewClock()
	url := pg.Database(t)
	s := openStore(t, url, Options{Clock: clk})
	feed := watchStream(t, "feed", s.Feed())
	changes := watchStream(t, "changes", s.Changes())
	put(t, s, mesh.Node{Path: "acme/Docs/a", NodeType: "Article"})
	changes.await(t, "the notice of acme/Docs/a", noticeOf("acme/Docs/a"))

	terminate(t, url, listenerPID(t, url)) // the listener's backend has exited
	down := feed.await(t, "the feed to go down", func(f FeedState) bool { return !f.Connected })
	put(t, s, mesh.Node{Path: "acme/Docs/b", NodeType: "Article"}) // its notice is lost
	clk.Advance(down.RetryIn)
	feed.await(t, "the feed to be back", func(f FeedState) bool { return f.Connected && f.Reconnects == 1 })
	put(t, s, mesh.Node{Path: "acme/Docs/c", NodeType: "Article"})
	changes.await(t, "the notice of acme/Docs/c", noticeOf("acme/Docs/c"))
	changes.await(t, "the gap notice standing for the lost ones", noticeOf(""))

	var got []string
	for _, n := range changes.values(t) {
		got = append(got, n.Path)
	}
	assert.Equal(t, []string{"acme/Docs/a", "", "acme/Docs/c"}, got, "the gap comes before the later writes' notices")
	gap := changes.values(t)[1]
	assert.Equal(t, mesh.ChangeNotice{Op: mesh.WriteUpdate}, gap, "the gap notice a subscriber that fell behind gets")
}

func TestClosingTheStoreCompletesLiveQueriesAndEndsItsStreams(t *testing.T) {
	t.Parallel()
	s := openStore(t, pg.Database(t), Options{})
	put(t, s, mesh.Node{Path: "acme/Docs/a", NodeType: "Role"})
	live := watchQuery(t, s, "namespace:acme/Docs")
	live.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	changes := watchStream(t, "changes", s.Changes())
	feed := watchStream(t, "feed", s.Feed())
	// Control: before Close, the fold answers.
	_, err := s.SecurityNodes(testContext(t))
	require.NoError(t, err)

	require.NoError(t, s.Close())
	assert.NoError(t, live.end(t), "a live query completes on Close")
	assert.NoError(t, changes.end(t))
	assert.NoError(t, feed.end(t))
	assert.Zero(t, s.Stats().LiveQueries)

	_, err = first(t, s.Get("acme/Docs/a"))
	assert.ErrorIs(t, err, ErrClosed)
	assert.True(t, mesh.IsUnavailable(err), "a closed store cannot say what is there: %v", err)
	_, err = first(t, s.Query("namespace:acme/Docs"))
	assert.True(t, mesh.IsUnavailable(err))
	_, err = s.SecurityNodes(testContext(t))
	assert.True(t, mesh.IsUnavailable(err))
	_, err = s.Put(context.Background(), mesh.Node{Path: "acme/Docs/b", NodeType: "Article"})
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, s.Delete(context.Background(), "acme/Docs/a"), ErrClosed)
	_, err = first(t, rx.Filter(s.Changes(), func(mesh.ChangeNotice) bool { return true }))
	assert.ErrorIs(t, err, rx.ErrEmpty, "a late subscriber to Changes sees it completed")
}

// livelyProvider answers its Initial and then stays live, as a provider fed
// by configuration or another service does.
type livelyProvider struct{}

func (livelyProvider) Name() string { return "lively" }
func (livelyProvider) Query(*mesh.Query) rx.Observable[mesh.Change] {
	return rx.Concat(rx.Return(mesh.Change{Kind: mesh.Initial}), rx.Never[mesh.Change]())
}

// Close completes a live query fanned in with Options.Providers, though a
// provider never completes by itself (memstore ends its queries the same
// way). Control: without the store's Until on its Querier (main), the
// store's part completed but the fan-in waited for the provider forever, and
// live.end gave up after testBudget with the stream still open.
func TestClosingTheStoreCompletesALiveQueryWhoseProviderStaysLive(t *testing.T) {
	t.Parallel()
	s := openStore(t, pg.Database(t), Options{Providers: []mesh.Provider{livelyProvider{}}})
	put(t, s, mesh.Node{Path: "acme/Docs/a", NodeType: "Article"})
	live := watchQuery(t, s, "namespace:acme/Docs")
	live.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })

	require.NoError(t, s.Close())
	assert.NoError(t, live.end(t), "a live query completes on Close")
}
