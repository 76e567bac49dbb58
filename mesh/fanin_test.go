package mesh_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// scripted is a provider whose frames come from a subject the test drives.
type scripted struct {
	name   string
	frames *rx.ReplaySubject[mesh.Change]
}

func newScripted(name string) *scripted {
	return &scripted{name: name, frames: rx.NewReplaySubject[mesh.Change](0)}
}

func (s *scripted) Name() string                                 { return s.name }
func (s *scripted) Query(*mesh.Query) rx.Observable[mesh.Change] { return s.frames }

func node(path, nodeType string) mesh.Node {
	n, err := mesh.Node{Path: path, NodeType: nodeType}.Normalize()
	if err != nil {
		panic(err)
	}
	return n
}

func paths(c mesh.Change) []string {
	var ps []string
	for _, n := range c.Items {
		ps = append(ps, n.Path)
	}
	return ps
}

func mustParse(t *testing.T, s string) *mesh.Query {
	t.Helper()
	q, err := mesh.Parse(s)
	require.NoError(t, err)
	return q
}

func TestTheMergedInitialWaitsForEveryProviderAndDeduplicatesInOrder(t *testing.T) {
	clk := rxtest.NewClock()
	a, b := newScripted("store"), newScripted("config")
	rec := rxtest.Record(clk, mesh.FanIn(mustParse(t, "namespace:acme"), []mesh.Provider{a, b}, clk, 15*time.Second))
	a.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{node("acme/b", "T"), node("acme/a", "T")}, Partitions: []string{"acme"}})
	assert.Empty(t, rec.Values(), "config has not answered yet")
	b.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{node("acme/a", "Dup"), node("acme/c", "T")}})
	require.Len(t, rec.Values(), 1)
	first := rec.Values()[0]
	assert.Equal(t, mesh.Initial, first.Kind)
	assert.Equal(t, []string{"acme/a", "acme/b", "acme/c"}, paths(first))
	assert.Equal(t, "T", first.Items[0].NodeType, "the first provider wins a duplicate")
	assert.Equal(t, []string{"acme"}, first.Partitions)
	assert.Empty(t, first.SilentProviders)
	assert.Zero(t, clk.Pending(), "a healthy query leaves no timer armed")
}

func TestAProviderSilentPastTheBudgetEndsTheReadNamingIt(t *testing.T) {
	clk := rxtest.NewClock()
	a, b := newScripted("store"), newScripted("static-config")
	rec := rxtest.Record(clk, mesh.FanIn(mustParse(t, "namespace:acme"), []mesh.Provider{a, b}, clk, 15*time.Second))
	a.frames.OnNext(mesh.Change{Kind: mesh.Initial})
	clk.Advance(15*time.Second - 1)
	require.False(t, rec.Terminated(), "not before the budget")
	clk.Advance(1)
	var stalled *mesh.ProviderStalledError
	require.ErrorAs(t, rec.Err(), &stalled)
	assert.Equal(t, []string{"static-config"}, stalled.Providers)
	assert.Equal(t, 15*time.Second, stalled.Budget)
	assert.Equal(t, mustParse(t, "namespace:acme").String(), stalled.Query)
	assert.True(t, mesh.IsUnavailable(rec.Err()))
	assert.Equal(t, rxtest.Error[mesh.Change](15*time.Second, rec.Err()), rec.Events()[0], "exactly at 15 s")
	// Negative control: the same provider answering one tick before the bound.
	clk2 := rxtest.NewClock()
	a2, b2 := newScripted("store"), newScripted("static-config")
	rec2 := rxtest.Record(clk2, mesh.FanIn(mustParse(t, "namespace:acme"), []mesh.Provider{a2, b2}, clk2, 15*time.Second))
	a2.frames.OnNext(mesh.Change{Kind: mesh.Initial})
	clk2.Advance(15*time.Second - 1)
	b2.frames.OnNext(mesh.Change{Kind: mesh.Initial})
	clk2.Advance(time.Minute)
	assert.NoError(t, rec2.Err())
	assert.Len(t, rec2.Values(), 1)
}

func TestAProviderThatCompletesWithoutAnInitialIsNamedAsSilent(t *testing.T) {
	clk := rxtest.NewClock()
	a, b := newScripted("store"), newScripted("config")
	rec := rxtest.Record(clk, mesh.FanIn(mustParse(t, "namespace:acme"), []mesh.Provider{a, b}, clk, 15*time.Second))
	a.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{node("acme/a", "T")}})
	b.frames.OnCompleted()
	require.Len(t, rec.Values(), 1)
	assert.Equal(t, []string{"config"}, rec.Values()[0].SilentProviders)
	assert.Equal(t, []string{"acme/a"}, paths(rec.Values()[0]))
	clk.Advance(time.Minute)
	assert.NoError(t, rec.Err(), "silence by completion is not a stall")
}

func TestLiveChangesPassThroughDeduplicated(t *testing.T) {
	clk := rxtest.NewClock()
	a, b := newScripted("store"), newScripted("config")
	rec := rxtest.Record(clk, mesh.FanIn(mustParse(t, "namespace:acme"), []mesh.Provider{a, b}, clk, 15*time.Second))
	a.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{node("acme/a", "T")}})
	b.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{node("acme/a", "T")}})
	a.frames.OnNext(mesh.Change{Kind: mesh.Added, Items: []mesh.Node{node("acme/n", "T")}})
	b.frames.OnNext(mesh.Change{Kind: mesh.Added, Items: []mesh.Node{node("acme/n", "T")}})   // already there: the store's is shown
	a.frames.OnNext(mesh.Change{Kind: mesh.Removed, Items: []mesh.Node{node("acme/a", "T")}}) // config still holds it: its node is shown
	b.frames.OnNext(mesh.Change{Kind: mesh.Removed, Items: []mesh.Node{node("acme/a", "T")}}) // now gone
	var kinds []string
	for _, c := range rec.Values()[1:] {
		kinds = append(kinds, c.Kind.String()+" "+paths(c)[0])
	}
	assert.Equal(t, []string{"added acme/n", "updated acme/a", "removed acme/a"}, kinds)
}

func TestAProviderResetResendsTheMergedResult(t *testing.T) {
	clk := rxtest.NewClock()
	a := newScripted("store")
	rec := rxtest.Record(clk, mesh.FanIn(mustParse(t, "namespace:acme"), []mesh.Provider{a}, clk, 15*time.Second))
	a.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{node("acme/a", "T")}})
	a.frames.OnNext(mesh.Change{Kind: mesh.Reset, Items: []mesh.Node{node("acme/b", "T")}})
	require.Len(t, rec.Values(), 2)
	assert.Equal(t, mesh.Reset, rec.Values()[1].Kind)
	assert.Equal(t, []string{"acme/b"}, paths(rec.Values()[1]))
}

func TestAProviderErrorEndsTheRead(t *testing.T) {
	clk := rxtest.NewClock()
	a, b := newScripted("store"), newScripted("config")
	rec := rxtest.Record(clk, mesh.FanIn(mustParse(t, "namespace:acme"), []mesh.Provider{a, b}, clk, 15*time.Second))
	a.frames.OnError(rxtest.ErrTest)
	assert.ErrorIs(t, rec.Err(), rxtest.ErrTest)
	assert.Zero(t, clk.Pending())
}

func TestTheMergedInitialHonoursSortAndLimit(t *testing.T) {
	clk := rxtest.NewClock()
	a, b := newScripted("a"), newScripted("b")
	rec := rxtest.Record(clk, mesh.FanIn(mustParse(t, "namespace:acme sort:name-desc limit:2"), []mesh.Provider{a, b}, clk, time.Second))
	n := func(path, name string) mesh.Node { x := node(path, "T"); x.Name = name; return x }
	a.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{n("acme/1", "a"), n("acme/2", "c")}})
	b.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{n("acme/3", "b"), n("acme/4", "c")}})
	assert.Equal(t, []string{"acme/2", "acme/4"}, paths(rec.Values()[0]), "name desc, then path")
}

func TestBudgetsNestStrictly(t *testing.T) {
	b := mesh.DefaultBudgets()
	assert.Equal(t, mesh.Budgets{Operation: 30 * time.Second, Nested: 25 * time.Second, Permission: 20 * time.Second, QueryInitial: 15 * time.Second}, b)
	require.NoError(t, b.Validate())
	assert.Error(t, mesh.Budgets{Operation: 10 * time.Second, Nested: 10 * time.Second, Permission: 5 * time.Second, QueryInitial: time.Second}.Validate())
	for _, d := range []time.Duration{time.Millisecond, time.Second, 6 * time.Second, time.Hour} {
		assert.Less(t, mesh.Nest(d), d)
		assert.Positive(t, mesh.Nest(d))
	}
	require.NoError(t, mesh.BudgetsFrom(2*time.Second).Validate())
}

// synchronous is a provider that answers inside Subscribe.
type synchronous struct{ items []mesh.Node }

func (s synchronous) Name() string { return "sync" }
func (s synchronous) Query(*mesh.Query) rx.Observable[mesh.Change] {
	return rx.Return(mesh.Change{Kind: mesh.Initial, Items: s.items})
}

// Negative control: with a plain Subject for "heard", subscribed before the
// stall timer, one 15 s timer stays armed here until unsubscription.
func TestAProviderAnsweringDuringSubscribeLeavesNoTimerArmed(t *testing.T) {
	clk := rxtest.NewClock()
	rec := rxtest.Record(clk, mesh.FanIn(mustParse(t, "namespace:acme"), []mesh.Provider{synchronous{}}, clk, 15*time.Second))
	require.Len(t, rec.Values(), 1)
	assert.Zero(t, clk.Pending(), "the stall timer is disarmed")
	assert.True(t, rec.Completed(), "every provider completed, so the read did")
}

// A limited query's merged live result stays the first N of the merged
// result: a provider's Added beyond them changes nothing, one into them
// pushes the last one out (whichever provider held it), and a Removed lets
// the next one in. Control: before, every provider frame passed through,
// so the live result grew past the limit (main sent "added [acme/a]" with
// no removal, then "added [acme/z]").
func TestAFanInOfALimitedQueryKeepsTheFirstNOfTheMergedResult(t *testing.T) {
	clk := rxtest.NewClock()
	a, b := newScripted("store"), newScripted("config")
	rec := rxtest.Record(clk, mesh.FanIn(mustParse(t, "namespace:acme limit:2"), []mesh.Provider{a, b}, clk, 15*time.Second))
	a.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{node("acme/b", "T"), node("acme/d", "T")}})
	b.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{node("acme/c", "T")}})
	require.Len(t, rec.Values(), 1)
	assert.Equal(t, []string{"acme/b", "acme/c"}, paths(rec.Values()[0]))

	frames := func(write func()) []string {
		before := len(rec.Values())
		write()
		var out []string
		for _, c := range rec.Values()[before:] {
			out = append(out, c.Kind.String()+" "+strings.Join(paths(c), ","))
		}
		return out
	}
	assert.Equal(t, []string{"added acme/a", "removed acme/c"},
		frames(func() { a.frames.OnNext(mesh.Change{Kind: mesh.Added, Items: []mesh.Node{node("acme/a", "T")}}) }))
	assert.Empty(t, frames(func() { b.frames.OnNext(mesh.Change{Kind: mesh.Added, Items: []mesh.Node{node("acme/z", "T")}}) }),
		"beyond the first two")
	assert.Equal(t, []string{"updated acme/b"},
		frames(func() { a.frames.OnNext(mesh.Change{Kind: mesh.Updated, Items: []mesh.Node{node("acme/b", "U")}}) }))
	assert.Equal(t, []string{"added acme/c", "removed acme/a"},
		frames(func() { a.frames.OnNext(mesh.Change{Kind: mesh.Removed, Items: []mesh.Node{node("acme/a", "T")}}) }))
	assert.NoError(t, rec.GrammarErr())
}

// A path two providers hold shows the first one's node live, as in the
// merged Initial: the second one's frames for it change nothing, and when
// the first removes it the second's node is shown (Updated), not dropped.
// Control: before, the second provider's Updated replaced the first's node
// (main sent "updated acme/x Config2") and the first's Removed was
// dropped, leaving its old node where a fresh read shows the second's.
func TestAPathTwoProvidersHoldShowsTheFirstProvidersNodeLive(t *testing.T) {
	// Limited and not: the two paths of the fan-in. Control: the limited
	// path before its fix answered b's update with "updated acme/x Stored"
	// and a's removal with nothing (the subscriber kept a deleted node).
	for _, q := range []string{"namespace:acme", "namespace:acme limit:2"} {
		t.Run(q, func(t *testing.T) { pathTwoProvidersHold(t, q) })
	}
}

func pathTwoProvidersHold(t *testing.T, q string) {
	clk := rxtest.NewClock()
	a, b := newScripted("store"), newScripted("config")
	rec := rxtest.Record(clk, mesh.FanIn(mustParse(t, q), []mesh.Provider{a, b}, clk, 15*time.Second))
	a.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{node("acme/x", "Stored")}})
	b.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{node("acme/x", "Config"), node("acme/y", "Config")}})
	require.Len(t, rec.Values(), 1)
	require.Equal(t, "Stored", rec.Values()[0].Items[0].NodeType, "the first provider wins")

	frames := func(write func()) []string {
		before := len(rec.Values())
		write()
		var out []string
		for _, c := range rec.Values()[before:] {
			for _, n := range c.Items {
				out = append(out, c.Kind.String()+" "+n.Path+" "+n.NodeType)
			}
		}
		return out
	}
	assert.Empty(t, frames(func() {
		b.frames.OnNext(mesh.Change{Kind: mesh.Updated, Items: []mesh.Node{node("acme/x", "Config2")}})
	}),
		"the shown node is the store's")
	assert.Equal(t, []string{"updated acme/x Config2"},
		frames(func() { a.frames.OnNext(mesh.Change{Kind: mesh.Removed, Items: []mesh.Node{node("acme/x", "Stored")}}) }))
	assert.Equal(t, []string{"updated acme/x Stored2"},
		frames(func() { a.frames.OnNext(mesh.Change{Kind: mesh.Added, Items: []mesh.Node{node("acme/x", "Stored2")}}) }))
	assert.Equal(t, []string{"removed acme/y Config"},
		frames(func() { b.frames.OnNext(mesh.Change{Kind: mesh.Removed, Items: []mesh.Node{node("acme/y", "Config")}}) }))
	assert.NoError(t, rec.GrammarErr())
}

// All of no providers have answered: the merged Initial is empty, sent at
// once, and the read completes, as every provider has. Negative control,
// run by hand: without FanIn's case for no providers, nothing was sent
// until the budget passed, and the read then failed with a
// *ProviderStalledError naming no provider ("provider(s)  sent no initial
// result within 1s").
func TestAFanInOfNoProvidersAnswersAnEmptyInitialAtOnceAndCompletes(t *testing.T) {
	clk := rxtest.NewClock()
	rec := rxtest.Record(clk, mesh.FanIn(mustParse(t, "namespace:acme"), nil, clk, time.Second))
	require.Len(t, rec.Values(), 1, "the Initial comes without waiting for the budget")
	assert.Equal(t, mesh.Initial, rec.Values()[0].Kind)
	assert.Empty(t, rec.Values()[0].Items)
	assert.True(t, rec.Completed())
	clk.Advance(time.Minute)
	assert.NoError(t, rec.Err(), "no stall is reported later either")
	assert.NoError(t, rec.GrammarErr())
}

// A budget that is not positive cannot bound anything: on a real clock a
// zero one raced the providers' own synchronous answers, and a negative one
// meant the same. FanIn refuses it with an *OptionsError naming it, before
// subscribing to any provider. Negative control, run by hand: without the
// check, budget 0 on the real clock was taken ("An error is expected but
// got nil": the provider's replayed Initial won the race against a stall
// timer already due).
func TestAFanInBudgetThatIsNotPositiveIsRefusedWithAnOptionsError(t *testing.T) {
	for _, budget := range []time.Duration{0, -time.Second} {
		a := newScripted("store")
		a.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{node("acme/a", "T")}})
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
		_, err := rx.First(ctx, mesh.FanIn(mustParse(t, "namespace:acme"), []mesh.Provider{a}, clock.New(), budget))
		cancel()
		var oe *mesh.OptionsError
		require.ErrorAs(t, err, &oe, "budget %v", budget)
		assert.Contains(t, oe.Error(), "budget")
		assert.Contains(t, oe.Error(), budget.String())
	}
	// Control: a positive budget reads the provider's answer.
	a := newScripted("store")
	a.frames.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{node("acme/a", "T")}})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
	defer cancel()
	c, err := rx.First(ctx, mesh.FanIn(mustParse(t, "namespace:acme"), []mesh.Provider{a}, clock.New(), time.Second))
	require.NoError(t, err)
	assert.Equal(t, []string{"acme/a"}, paths(c))
}
