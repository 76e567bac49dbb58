package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestTheVersionAndLastModifiedMoveOnlyWithAVisibleChange(t *testing.T) {
	t.Parallel()
	clk := rxtest.NewClock()
	s := openStore(t, pg.Database(t), Options{Clock: clk})

	created := put(t, s, mesh.Node{Path: "acme/Docs/a", NodeType: "Article", Name: "A",
		Content: json.RawMessage(`{"a": 1, "b": [1, 2]}`)})
	assert.Equal(t, int64(1), created.Version, "a new node is version 1")
	assert.True(t, clk.Now().Equal(created.LastModified), "LastModified comes from the store's clock: %v", created.LastModified)
	assert.Equal(t, "acme/Docs", created.Namespace)
	assert.Equal(t, "a", created.ID)
	assert.Equal(t, "acme/Docs/a", created.MainNode)

	got, err := first(t, s.Get("acme/Docs/a"))
	require.NoError(t, err)
	assert.Equal(t, created, got, "Get reads what Put returned")

	// The same values spelled differently: key order, spacing, 2.0 for 2.
	clk.Advance(time.Minute)
	same := put(t, s, mesh.Node{Path: "acme/Docs/a", NodeType: "Article", Name: "A",
		Content: json.RawMessage(`{"b":[1,2.0],"a":1}`)})
	assert.Equal(t, created.Version, same.Version, "nothing visible changed")
	assert.True(t, created.LastModified.Equal(same.LastModified), "a no-op write keeps LastModified")

	// Control: a real change, at the same clock reading, bumps both.
	changed := put(t, s, mesh.Node{Path: "acme/Docs/a", NodeType: "Article", Name: "A",
		Content: json.RawMessage(`{"a": 2}`)})
	assert.Equal(t, int64(2), changed.Version)
	assert.True(t, clk.Now().Equal(changed.LastModified))

	prev := changed
	for _, c := range []struct {
		what string
		edit func(*mesh.Node)
	}{
		{"name", func(n *mesh.Node) { n.Name = "B" }},
		{"node type", func(n *mesh.Node) { n.NodeType = "Page" }},
		{"state", func(n *mesh.Node) { n.State = mesh.StateDeleted }},
		{"main node", func(n *mesh.Node) { n.MainNode = "acme" }},
		{"content to none", func(n *mesh.Node) { n.Content = nil }},
	} {
		next := prev
		next.Version, next.LastModified = 0, time.Time{}
		c.edit(&next)
		stored := put(t, s, next)
		assert.Equal(t, prev.Version+1, stored.Version, "a change of %s bumps the version", c.what)
		prev = stored
	}
	assert.Nil(t, prev.Content)

	del(t, s, "acme/Docs/a")
	_, err = first(t, s.Get("acme/Docs/a"))
	assert.ErrorIs(t, err, rx.ErrEmpty, "a deleted node is absent")
	del(t, s, "acme/Docs/a") // deleting an absent node is not an error
	del(t, s, "nowhere/x")   // nor is deleting from a partition never written
	again := put(t, s, mesh.Node{Path: "acme/Docs/a", NodeType: "Article"})
	assert.Equal(t, int64(1), again.Version, "a node written after its deletion is new")
}

// refuseConnections terminates every connection to the database of url and
// refuses new ones until the test ends.
func refuseConnections(t *testing.T, url string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	admin := connect(t, pg.Server(t).URL())
	ctx := testContext(t)
	db := pgx.Identifier{cfg.Database}.Sanitize()
	_, err = admin.Exec(ctx, `ALTER DATABASE `+db+` ALLOW_CONNECTIONS false`)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testBudget)
		defer cancel()
		_, err := admin.Exec(ctx, `ALTER DATABASE `+db+` ALLOW_CONNECTIONS true`)
		assert.NoError(t, err)
	})
	_, err = admin.Exec(ctx, `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = $1`, cfg.Database)
	require.NoError(t, err)
}

func TestGetAnswersUnavailableNeverAbsentWhenTheDatabaseCannotBeReached(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	s := openStore(t, url, Options{})
	put(t, s, mesh.Node{Path: "acme/Docs/here", NodeType: "Article"})

	// Control: while the database answers, the three outcomes are a node,
	// an empty completion, and (below) an error.
	got, err := first(t, s.Get("acme/Docs/here"))
	require.NoError(t, err)
	assert.Equal(t, "acme/Docs/here", got.Path)
	_, err = first(t, s.Get("acme/Docs/missing"))
	require.ErrorIs(t, err, rx.ErrEmpty)

	refuseConnections(t, url)
	for _, path := range []string{"acme/Docs/here", "acme/Docs/missing"} {
		_, err := first(t, s.Get(path))
		require.Error(t, err, "get %s", path)
		assert.NotErrorIs(t, err, rx.ErrEmpty, "get %s: could not find out is never absent", path)
		assert.True(t, mesh.IsUnavailable(err), "get %s: %v", path, err)
		var unavailable *mesh.UnavailableError
		require.ErrorAs(t, err, &unavailable)
		assert.Equal(t, "read "+path, unavailable.Op)
	}
	_, err = first(t, s.Query("namespace:acme/Docs"))
	assert.True(t, mesh.IsUnavailable(err), "a query the database cannot answer is unavailable: %v", err)
	_, err = s.Put(testContext(t), mesh.Node{Path: "acme/Docs/new", NodeType: "Article"})
	assert.True(t, mesh.IsUnavailable(err), "a write the database cannot take is unavailable: %v", err)
}

// apiHostile are the hostile partition names a path can carry (no control
// characters, no slash) and the query language can quote (no glob star, no
// alternation bar).
func apiHostile() []string {
	return slices.DeleteFunc(hostile(), func(s string) bool {
		return strings.ContainsAny(s, "\t\n\r/*|")
	})
}

// quoteQueryValue quotes v for the query language.
func quoteQueryValue(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

func TestHostilePartitionNamesAndValuesRoundTripThroughTheStore(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	s := openStore(t, url, Options{})
	conn := connect(t, url)
	ctx := testContext(t)
	_, err := conn.Exec(ctx, `CREATE TABLE public.canary (v text); INSERT INTO public.canary VALUES ('alive')`)
	require.NoError(t, err)

	for _, partition := range apiHostile() {
		before := schemas(t, conn)
		path := partition + "/Docs/" + partition + `'; DELETE FROM public.canary; --`
		n := mesh.Node{
			Path: path, NodeType: partition, Name: partition + `"; DROP TABLE public.canary; --`,
			Content: json.RawMessage(fmt.Sprintf(`{"q": %q, "b": "back\\slash"}`, partition)),
		}
		stored := put(t, s, n)

		got, err := first(t, s.Get(path))
		require.NoError(t, err, "get %q", path)
		assert.Equal(t, stored, got)
		assert.Equal(t, n.Name, got.Name)
		assert.Equal(t, partition, got.NodeType)
		assert.JSONEq(t, string(n.Content), string(got.Content))

		q := "path:" + quoteQueryValue(path)
		c := initialOf(t, s, q)
		assert.Equal(t, []string{path}, pathsOf(c.Items), "query %s", q)
		assert.Equal(t, []string{strings.ToLower(partition)}, c.Partitions, "query %s", q)

		after := schemas(t, conn)
		added := slices.DeleteFunc(slices.Clone(after), func(s string) bool { return slices.Contains(before, s) })
		assert.Equal(t, []string{strings.ToLower(partition)}, added, "exactly the partition's schema is new")
		for _, sc := range before {
			assert.Contains(t, after, sc, "schema %q vanished after partition %q", sc, partition)
		}
	}
	assert.Equal(t, []string{"alive"}, queryStrings(t, conn, `SELECT v FROM public.canary`))
	var want []string
	for _, p := range apiHostile() {
		want = append(want, strings.ToLower(p))
	}
	slices.Sort(want)
	assert.Equal(t, want, queryStrings(t, conn, `SELECT schema_name FROM public.searchable_schemas ORDER BY schema_name COLLATE "C"`))
}

func TestWritesNoSchemaCanHoldAreRefusedWithTypedErrorsAndCreateNothing(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	s := openStore(t, url, Options{})
	conn := connect(t, url)
	put(t, s, mesh.Node{Path: "acme/ok", NodeType: "Article"}) // control: the store writes
	before := catalogSnapshot(t, conn)
	ctx := testContext(t)

	_, err := s.Put(ctx, mesh.Node{Path: "_Foo/x", NodeType: "Thing"})
	var unroutable *mesh.UnroutablePathError
	require.ErrorAs(t, err, &unroutable)
	assert.Equal(t, "_Foo", unroutable.Segment)

	for _, path := range []string{"pg_evil/x", "public/x", "system_access/x", strings.Repeat("p", MaxSchemaNameLen+1) + "/x"} {
		_, err := s.Put(ctx, mesh.Node{Path: path, NodeType: "Thing"})
		var nameErr *PartitionNameError
		require.ErrorAs(t, err, &nameErr, "put %s", path)
		_, err = first(t, s.Get(path))
		assert.ErrorIs(t, err, rx.ErrEmpty, "get %s: nothing can be stored there", path)
	}

	var nodeErr *mesh.NodeError
	_, err = s.Put(ctx, mesh.Node{Path: "acme/nul", NodeType: "Article", Name: "a\x00b"})
	require.ErrorAs(t, err, &nodeErr)
	assert.Equal(t, "name", nodeErr.Field)
	_, err = s.Put(ctx, mesh.Node{Path: "acme/long", NodeType: strings.Repeat("t", mesh.MaxNodeTypeLen+1)})
	require.ErrorAs(t, err, &nodeErr)
	assert.Equal(t, "nodeType", nodeErr.Field)
	_, err = s.Put(ctx, mesh.Node{Path: "acme/json", NodeType: "Article", Content: json.RawMessage(`{"x": "\u0000"}`)})
	require.ErrorAs(t, err, &nodeErr, "JSON PostgreSQL cannot store is the caller's error, not unavailability")
	assert.Equal(t, "content", nodeErr.Field)
	assert.False(t, mesh.IsUnavailable(err))

	assert.Equal(t, before, catalogSnapshot(t, conn), "no schema, table or function was created or changed")
	for _, path := range []string{"acme/nul", "acme/long", "acme/json"} {
		_, err := first(t, s.Get(path))
		assert.ErrorIs(t, err, rx.ErrEmpty, "%s was not stored", path)
	}
	got, err := first(t, s.Get("acme/ok"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), got.Version, "what was stored is untouched")
}

func TestAGlobalSatelliteRegisteredInTheRouterGetsASchemaNoFanOutReads(t *testing.T) {
	t.Parallel()
	url := pg.Database(t)
	// Control: with the default registry, _Policy has nowhere to live.
	plain := openStore(t, url, Options{})
	_, err := plain.Put(testContext(t), mesh.Node{Path: "_Policy/root", NodeType: "PartitionAccessPolicy"})
	var unroutable *mesh.UnroutablePathError
	require.ErrorAs(t, err, &unroutable)

	router, err := mesh.NewRouter(mesh.RouterConfig{GlobalSatellites: map[string]string{
		"_Access": GlobalAccessSchema, "_Policy": "system_policy",
	}})
	require.NoError(t, err)
	s := openStore(t, url, Options{Router: router, GatedTypes: accessTypes})
	stored := put(t, s, mesh.Node{Path: "_Policy/root", NodeType: "PartitionAccessPolicy"})
	put(t, s, mesh.Node{Path: "acme/doc", NodeType: "PartitionAccessPolicy"})

	got, err := first(t, s.Get("_Policy/root"))
	require.NoError(t, err)
	assert.Equal(t, stored, got)
	pinned := initialOf(t, s, "path:_Policy/root")
	assert.Equal(t, []string{"_Policy/root"}, pathsOf(pinned.Items))
	assert.Equal(t, []string{"system_policy"}, pinned.Partitions, "the read is pinned to the registered schema")

	// A partition spelled as the registered schema would share it with the
	// satellite. Control: without the router's GlobalSchema check in
	// schemaFor the write is accepted into system_policy.
	_, err = s.Put(testContext(t), mesh.Node{Path: "System_Policy/x", NodeType: "PartitionAccessPolicy"})
	var nameErr *PartitionNameError
	assert.ErrorAs(t, err, &nameErr, "a partition named after a registered global satellite's schema is refused")

	all := initialOf(t, s, "nodeType:PartitionAccessPolicy partitions:all")
	assert.Equal(t, []string{"acme/doc"}, pathsOf(all.Items), "a global satellite schema is not a partition")
	assert.NotContains(t, all.Partitions, "system_policy")
	conn := connect(t, url)
	assert.Equal(t, []string{"acme"}, queryStrings(t, conn, `SELECT schema_name FROM public.searchable_schemas`))

	_, folded := foldNode(t, s, "_Policy/root")
	assert.NotNil(t, folded, "the new schema's tables feed the security fold")
}
