package memstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// evaluationsFor subscribes 20 live queries, runs 1000 writes of Article
// nodes into their namespace, and returns how the store settled each
// (write, query) pair, and the recorders.
func evaluationsFor(t *testing.T, query string) (memstore.Stats, []*rxtest.Recorder[mesh.Change]) {
	t.Helper()
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	var recs []*rxtest.Recorder[mesh.Change]
	for range 20 {
		rec := rxtest.Record(nil, s.Query(query))
		t.Cleanup(rec.Unsubscribe)
		recs = append(recs, rec)
	}
	before := s.Stats()
	for i := range 1000 {
		put(t, s, fmt.Sprintf("acme/Docs/a%d", i%50), "Article", fmt.Sprintf(`{"i":%d}`, i))
	}
	settle(t, s)
	after := s.Stats()
	return memstore.Stats{Evaluations: after.Evaluations - before.Evaluations, Skipped: after.Skipped - before.Skipped}, recs
}

func TestAWriteOfAnUnrelatedNodeTypeReRunsNoLiveQuery(t *testing.T) {
	stats, recs := evaluationsFor(t, "namespace:acme/Docs nodeType:Page|Report")
	assert.Zero(t, stats.Evaluations, "an Article write cannot change a query for Pages and Reports")
	assert.EqualValues(t, 20*1000, stats.Skipped, "every (write, query) pair was settled without matching")
	for _, rec := range recs {
		assert.Len(t, rec.Values(), 1, "the constrained queries received their Initial and nothing else")
	}

	// Negative control: the same queries without the type constraint must be
	// evaluated for every write, and receive its frame.
	stats, recs = evaluationsFor(t, "namespace:acme/Docs")
	assert.EqualValues(t, 20*1000, stats.Evaluations)
	assert.Zero(t, stats.Skipped)
	assert.Len(t, recs[0].Values(), 1+1000, "the Initial, then one frame per write")
}

func TestAWriteOutsideAQuerysPartitionOrAnchorIsSettledWithoutMatching(t *testing.T) {
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	var recs []*rxtest.Recorder[mesh.Change]
	for _, q := range []string{
		"namespace:acme/Docs",                  // the control: the write lands here
		"namespace:beta/Docs",                  // another partition
		"namespace:acme/Other",                 // another namespace
		"path:acme/Docs/x/y scope:descendants", // below the written node
		"path:acme/Docs/z",                     // another node
	} {
		rec := rxtest.Record(nil, s.Query(q))
		t.Cleanup(rec.Unsubscribe)
		recs = append(recs, rec)
	}

	before := s.Stats()
	put(t, s, "acme/Docs/x", "Article", "")
	settle(t, s)
	after := s.Stats()
	assert.EqualValues(t, 1, after.Evaluations-before.Evaluations, "only the acme/Docs query is matched")
	assert.EqualValues(t, 4, after.Skipped-before.Skipped, "the others cannot hold acme/Docs/x")
	assert.Len(t, recs[0].Values(), 2, "the Initial and the Added frame")
	for _, rec := range recs[1:] {
		assert.Len(t, rec.Values(), 1)
	}
}

// An observer may write to the store from inside OnNext: frames are delivered
// after the store's lock is released, and the frame of the nested write
// arrives after the one being delivered.
func TestAnObserverMayWriteToTheStoreFromOnNext(t *testing.T) {
	// Not closed by a cleanup: were the store deadlocked, Close would wait
	// for its lock forever and the failure below would never be reported.
	s, err := memstore.New(memstore.Options{Clock: rxtest.NewClock()})
	require.NoError(t, err)
	put(t, s, "acme/Docs/a", "Article", "")

	done := make(chan []mesh.ChangeKind, 1)
	go func() {
		var kinds []mesh.ChangeKind
		added := make(chan struct{})
		sub := s.Query("namespace:acme/Docs").Subscribe(rx.NewObserver(func(c mesh.Change) {
			kinds = append(kinds, c.Kind)
			if c.Kind == mesh.Added {
				close(added)
			}
			if c.Kind == mesh.Initial {
				// Were frames delivered under the store's lock, this Put would
				// wait for it forever and the bounded receive below would trip.
				_, err := s.Put(context.Background(), mesh.Node{Path: "acme/Docs/b", NodeType: "Article"})
				assert.NoError(t, err)
				_, err = firstErr(s.Get("acme/Docs/b"))
				assert.NoError(t, err, "the nested write is visible to a read at once")
			}
		}, func(err error) { assert.NoError(t, err) }, nil))
		select {
		case <-added: // delivered off the writer's goroutine, after the Initial
		case <-timeoutAfter(t):
		}
		sub.Unsubscribe()
		done <- kinds
	}()
	select {
	case kinds := <-done:
		assert.Equal(t, []mesh.ChangeKind{mesh.Initial, mesh.Added}, kinds, "the nested write's frame follows the Initial")
		require.NoError(t, s.Close())
	case <-timeoutAfter(t):
		t.Fatalf("subscribing with an observer that writes did not return within %s", bound)
	}
}

// Queries subscribing while a writer runs see every write exactly once:
// either in their Initial or as one Updated frame after it.
func TestRegistrationAndInitialAreOneStepWithRespectToWrites(t *testing.T) {
	s := newStore(t, memstore.Options{})
	put(t, s, "acme/Counter/c", "Counter", `{"n":0}`)

	started, stop := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // writes until told to stop, so every subscription below races it
		defer wg.Done()
		for i := 1; ; i++ {
			_, err := s.Put(context.Background(), mesh.Node{Path: "acme/Counter/c", NodeType: "Counter",
				Content: fmt.Appendf(nil, `{"n":%d}`, i)})
			if err != nil {
				t.Errorf("put %d: %v", i, err)
				return
			}
			if i == 1 {
				close(started)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	select {
	case <-started:
	case <-timeoutAfter(t):
		t.Fatalf("the writer did not start within %s", bound)
	}
	var recs []*rxtest.Recorder[mesh.Change]
	for range 100 {
		rec := rxtest.Record(nil, s.Query("namespace:acme/Counter"))
		t.Cleanup(rec.Unsubscribe)
		recs = append(recs, rec)
	}
	close(stop)
	waitGroup(t, &wg)
	settle(t, s)
	last := first(t, s.Get("acme/Counter/c")).Version

	for i, rec := range recs {
		frames := rec.Values()
		require.NotEmpty(t, frames)
		require.Equal(t, mesh.Initial, frames[0].Kind)
		require.Len(t, frames[0].Items, 1)
		version := frames[0].Items[0].Version
		for _, f := range frames[1:] {
			if f.Kind == mesh.Reset { // the subscriber fell behind: the Reset stands for the frames it missed
				require.Len(t, f.Items, 1)
				require.Greater(t, f.Items[0].Version, version)
				version = f.Items[0].Version
				continue
			}
			require.Equal(t, mesh.Updated, f.Kind)
			// A write lost between the Initial's read and the registration
			// would show as a gap here; one counted twice, as a repeat.
			require.Equal(t, version+1, f.Items[0].Version, "subscriber %d: versions follow each other without a gap or repeat", i)
			version = f.Items[0].Version
		}
		assert.Equal(t, last, version, "subscriber %d ends at the last write", i)
	}
	t.Logf("%d writes raced %d subscriptions", last-1, len(recs))
}

func TestCloseCompletesLiveQueriesAndRefusesFurtherWork(t *testing.T) {
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	put(t, s, "acme/Docs/a", "Article", "")
	q := rxtest.Record(nil, s.Query("namespace:acme/Docs"))
	changesEnded := make(chan struct{})
	changes := rxtest.Record(nil, rx.Finally(s.Changes(), func() { close(changesEnded) }))
	require.False(t, q.Terminated(), "a live query stays open (the control)")
	require.False(t, changes.Terminated())
	require.Equal(t, 1, s.Stats().LiveQueries)

	require.NoError(t, s.Close())
	select {
	case <-changesEnded: // delivered by the subscription's own drain
	case <-timeoutAfter(t):
	}
	assert.True(t, q.Completed(), "Close completes a live query")
	assert.True(t, changes.Completed(), "Close completes Changes")
	assert.NoError(t, q.GrammarErr())
	assert.Zero(t, s.Stats().LiveQueries)

	_, err := s.Put(context.Background(), mesh.Node{Path: "acme/Docs/b", NodeType: "Article"})
	assert.ErrorIs(t, err, memstore.ErrClosed)
	assert.ErrorIs(t, s.Delete(context.Background(), "acme/Docs/a"), memstore.ErrClosed)
	_, err = firstErr(s.Get("acme/Docs/a"))
	var unavailable *mesh.UnavailableError
	assert.ErrorAs(t, err, &unavailable)
	assert.ErrorIs(t, err, memstore.ErrClosed)
	_, err = firstErr(s.Query("namespace:acme/Docs"))
	assert.ErrorAs(t, err, &unavailable)
	assert.NoError(t, s.Close(), "closing twice is harmless")
}

// A mesh-wide query reads the partitions created after it subscribed, as a
// fresh read would; a global satellite schema is not a partition.
func TestAPartitionCreatedAfterAMeshWideQuerySubscribedJoinsItsLiveResult(t *testing.T) {
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock()})
	put(t, s, "acme/a", "Article", "")
	rec := rxtest.Record(nil, s.Query("nodeType:Article partitions:all"))
	t.Cleanup(rec.Unsubscribe)

	put(t, s, "_Access/g", "Article", "")
	put(t, s, "newco/b", "Article", "")
	settle(t, s)
	frames := rec.Values()
	require.Len(t, frames, 2, "the Initial and newco/b's frame; _Access/g is not in a partition")
	assert.Equal(t, []string{"acme"}, frames[0].Partitions)
	assert.Equal(t, mesh.Added, frames[1].Kind)
	assert.Equal(t, []string{"newco/b"}, paths(frames[1].Items))

	fresh := first(t, s.Query("nodeType:Article partitions:all"))
	assert.Equal(t, []string{"acme/a", "newco/b"}, paths(fresh.Items), "the live result equals a fresh read")
	assert.Equal(t, []string{"acme", "newco"}, fresh.Partitions)
}

// A query narrowed to its type's declared instance locations reads only
// those, live as well as initially.
func TestANarrowedQueryReadsOnlyTheDeclaredPartitions(t *testing.T) {
	router, err := mesh.NewRouter(mesh.RouterConfig{InstanceLocations: map[string][]string{"Widget": {"namespace:acme"}}})
	require.NoError(t, err)
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock(), Router: router})
	put(t, s, "acme/w1", "Widget", "")
	put(t, s, "beta/w2", "Widget", "")
	rec := rxtest.Record(nil, s.Query("nodeType:Widget partitions:all"))
	t.Cleanup(rec.Unsubscribe)

	put(t, s, "beta/w3", "Widget", "")
	put(t, s, "acme/w4", "Widget", "")
	settle(t, s)
	frames := rec.Values()
	require.Len(t, frames, 2, "the Initial and acme/w4's frame, nothing for beta")
	assert.Equal(t, []string{"acme/w1"}, paths(frames[0].Items))
	assert.Equal(t, []string{"acme"}, frames[0].Partitions)
	assert.Equal(t, []string{"acme/w4"}, paths(frames[1].Items))
	// The control: an undeclared type reads beta too.
	other := first(t, s.Query("(nodeType:Gadget OR nodeType:Widget) partitions:all"))
	assert.Equal(t, []string{"acme/w1", "acme/w4", "beta/w2", "beta/w3"}, paths(other.Items))
}

func TestExtraProvidersAreFannedInBesideTheStore(t *testing.T) {
	config := staticProvider{nodes: []mesh.Node{{ID: "settings", Namespace: "acme/Docs", Path: "acme/Docs/settings", NodeType: "Config"}}}
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock(), Providers: []mesh.Provider{config}})
	put(t, s, "acme/Docs/a", "Article", "")
	got := first(t, s.Query("namespace:acme/Docs"))
	assert.Equal(t, []string{"acme/Docs/a", "acme/Docs/settings"}, paths(got.Items))
	assert.Empty(t, got.SilentProviders)
}

type staticProvider struct{ nodes []mesh.Node }

func (staticProvider) Name() string { return "static" }
func (p staticProvider) Query(q *mesh.Query) rx.Observable[mesh.Change] {
	var items []mesh.Node
	for _, n := range p.nodes {
		if q.Matches(n) {
			items = append(items, n)
		}
	}
	return rx.Return(mesh.Change{Kind: mesh.Initial, Items: items})
}

func waitGroup(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-timeoutAfter(t):
		t.Fatalf("writers did not finish within %s", bound)
	}
}

// timeoutAfter is a channel closed when bound has passed in real time.
func timeoutAfter(t *testing.T) <-chan struct{} {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return ctx.Done()
}

// A limited live query's frames keep its result the first N of a fresh
// read: a node written into the first N enters and pushes the last one out,
// one written beyond them changes nothing, and a removal lets the next one
// in. Control: before, every matching write was an Added, so the live
// result grew past the limit (main printed "added [acme/L/p2]", "added
// [acme/L/p4]" while a fresh read was [acme/L/p1 acme/L/p2]); the
// conformance suite's limit queries (meshtest convergence) fail the same
// way.
func TestALimitedLiveQueryKeepsTheFirstNOfAFreshRead(t *testing.T) {
	s := newStore(t, memstore.Options{})
	put(t, s, "acme/L/p1", "Article", "")
	put(t, s, "acme/L/p3", "Article", "")
	const q = "namespace:acme/L limit:2"
	var (
		mu     sync.Mutex
		frames []string
	)
	sub := s.Query(q).Subscribe(rx.NewObserver(func(c mesh.Change) {
		mu.Lock()
		defer mu.Unlock()
		frames = append(frames, fmt.Sprint(c.Kind, paths(c.Items)))
	}, nil, nil))
	defer sub.Unsubscribe()
	step := func(write func(), want ...string) {
		t.Helper()
		mu.Lock()
		frames = nil
		mu.Unlock()
		write()
		settle(t, s)
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, want, frames)
	}
	step(func() { put(t, s, "acme/L/p2", "Article", "") }, "added [acme/L/p2]", "removed [acme/L/p3]")
	step(func() { put(t, s, "acme/L/p4", "Article", "") })
	step(func() { put(t, s, "acme/L/p2", "Article", `{"v":2}`) }, "updated [acme/L/p2]")
	step(func() { require.NoError(t, s.Delete(context.Background(), "acme/L/p1")) }, "added [acme/L/p3]", "removed [acme/L/p1]")
	assert.Equal(t, []string{"acme/L/p2", "acme/L/p3"}, paths(first(t, s.Query(q)).Items), "a fresh read")
}
