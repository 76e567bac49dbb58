package memstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestTheStoreOwnsVersionAndLastModifiedAndTakesTimeFromItsClock(t *testing.T) {
	clk := rxtest.NewClock()
	s := newStore(t, memstore.Options{Clock: clk})
	created, err := s.Put(context.Background(), mesh.Node{Path: "acme/a", NodeType: "Article", Version: 99,
		LastModified: time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC), Content: json.RawMessage(`{"a":1}`)})
	require.NoError(t, err)
	assert.EqualValues(t, 1, created.Version, "a new node starts at version 1, whatever the caller sent")
	assert.True(t, created.LastModified.Equal(clk.Now()), "LastModified is the store's clock")

	clk.Advance(time.Minute)
	same := put(t, s, "acme/a", "Article", `{"a":1.0}`)
	assert.EqualValues(t, 1, same.Version)
	assert.True(t, same.LastModified.Equal(created.LastModified), "a no-op write keeps the old time")

	changed := put(t, s, "acme/a", "Article", `{"a":2}`)
	assert.EqualValues(t, 2, changed.Version)
	assert.True(t, changed.LastModified.Equal(clk.Now()), "a real change takes the clock's time")
	assert.True(t, changed.LastModified.Equal(created.LastModified.Add(time.Minute)))
}

func TestAWriteThatMeansTheSameJSONIsNotAChange(t *testing.T) {
	for _, c := range []struct {
		before, after string
		change        bool
	}{
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, false},
		{`{"a":1}`, ` { "a" : 1 } `, false},
		{`{"a":1}`, `{"a":1.0}`, false},
		{`{"a":100}`, `{"a":1e2}`, false},
		{`null`, ``, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, true},
		{`{"a":1}`, `{"a":"1"}`, true},
		{`{"a":1}`, `{"a":1,"b":null}`, true},
		{`{"a":12345678901234567890}`, `{"a":12345678901234567891}`, true},
		{`{"a":1e131071}`, `{"a":1e131070}`, true}, // the largest exponents every store holds
		{`{"a":{"b":true}}`, `{"a":{"b":false}}`, true},
	} {
		s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
		before := put(t, s, "acme/a", "Article", c.before)
		after := put(t, s, "acme/a", "Article", c.after)
		assert.Equal(t, c.change, after.Version != before.Version, "%s then %s", c.before, c.after)
	}
}

func TestEachVisibleFieldIsAChange(t *testing.T) {
	base := mesh.Node{Path: "acme/a", NodeType: "Article", Name: "A", MainNode: "acme/a", Content: json.RawMessage(`{"x":1}`)}
	for what, edit := range map[string]func(*mesh.Node){
		"name":      func(n *mesh.Node) { n.Name = "B" },
		"node type": func(n *mesh.Node) { n.NodeType = "Page" },
		"state":     func(n *mesh.Node) { n.State = mesh.StateDeleted },
		"main node": func(n *mesh.Node) { n.MainNode = "acme" },
		"content":   func(n *mesh.Node) { n.Content = json.RawMessage(`{"x":2}`) },
		"nothing":   func(*mesh.Node) {}, // the control
	} {
		s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
		before, err := s.Put(context.Background(), base)
		require.NoError(t, err)
		n := base
		edit(&n)
		after, err := s.Put(context.Background(), n)
		require.NoError(t, err)
		assert.Equal(t, what != "nothing", after.Version == before.Version+1, "a change of %s", what)
	}
}

func TestTheStoreKeepsItsOwnCopyOfTheContent(t *testing.T) {
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	content := []byte(`{"a":1}`)
	_, err := s.Put(context.Background(), mesh.Node{Path: "acme/a", NodeType: "Item", Content: content})
	require.NoError(t, err)
	copy(content, `{"a":9}`)
	got := first(t, s.Get("acme/a"))
	assert.JSONEq(t, `{"a":1}`, string(got.Content), "the caller reusing its buffer does not change the store")
}

func TestAWriteUnderAnUnregisteredGlobalSatelliteIsRefusedByName(t *testing.T) {
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	_, err := s.Put(context.Background(), mesh.Node{Path: "_Foo/x", NodeType: "Thing"})
	var unroutable *mesh.UnroutablePathError
	require.ErrorAs(t, err, &unroutable)
	assert.Equal(t, "_Foo", unroutable.Segment)
	assert.Contains(t, err.Error(), "GlobalSatellites")
	assert.Zero(t, s.Stats().Nodes, "nothing was stored")
	assert.NoError(t, s.Delete(context.Background(), "_Foo/x"), "deleting there is deleting nothing")

	// The control: a registered one is stored.
	_, err = s.Put(context.Background(), mesh.Node{Path: "_Access/x", NodeType: "AccessAssignment"})
	require.NoError(t, err)
	assert.Equal(t, 1, s.Stats().Nodes)
}

func TestPathsThatDifferOnlyInCaseAreTwoNodesThatMatchCaseInsensitively(t *testing.T) {
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	put(t, s, "acme/Docs/A", "Article", `{"v":"upper"}`)
	put(t, s, "acme/Docs/a", "Article", `{"v":"lower"}`)
	assert.JSONEq(t, `{"v":"upper"}`, string(first(t, s.Get("acme/Docs/A")).Content))
	assert.JSONEq(t, `{"v":"lower"}`, string(first(t, s.Get("acme/Docs/a")).Content))
	assert.Equal(t, []string{"acme/Docs/A", "acme/Docs/a"}, paths(first(t, s.Query("path:ACME/docs/a")).Items))
	assert.Equal(t, []string{"acme/Docs/A", "acme/Docs/a"}, paths(first(t, s.Query("namespace:Acme/DOCS")).Items))

	require.NoError(t, s.Delete(context.Background(), "acme/Docs/A"))
	assert.Equal(t, []string{"acme/Docs/a"}, paths(first(t, s.Query("namespace:acme/docs")).Items))
	_, err := firstErr(s.Get("acme/Docs/A"))
	assert.Error(t, err, "the deleted variant is absent")
}

// Every setting New refuses is an *mesh.OptionsError naming it. Negative
// control (run): with the errors made by fmt.Errorf (as before), errors.As
// finds no OptionsError in the store's own rows.
func TestNewRefusesOptionsItCannotHonour(t *testing.T) {
	_, err := memstore.New(memstore.Options{Budgets: mesh.Budgets{Operation: time.Second, Nested: 2 * time.Second, Permission: time.Second, QueryInitial: time.Second}})
	assert.ErrorContains(t, err, "must be strictly smaller", "budgets that do not nest")
	for setting, opts := range map[string]memstore.Options{
		"mesh: Budgets.Nested":           {Budgets: mesh.Budgets{Operation: time.Second, Nested: 2 * time.Second, Permission: time.Second, QueryInitial: time.Second}},
		"memstore: Options.Providers[0]": {Providers: []mesh.Provider{nil}},
		"memstore: Options.QueueFrames":  {QueueFrames: -1},
	} {
		_, err := memstore.New(opts)
		var oe *mesh.OptionsError
		if assert.True(t, errors.As(err, &oe), "%s: %v", setting, err) {
			assert.Equal(t, setting, oe.Setting)
		}
	}
	_, err = memstore.New(memstore.Options{Providers: []mesh.Provider{nil}})
	assert.ErrorContains(t, err, "Providers[0] is nil")
	s, err := memstore.New(memstore.Options{}) // the control
	require.NoError(t, err)
	require.NoError(t, s.Close())
}
