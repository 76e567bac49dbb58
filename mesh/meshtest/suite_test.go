package meshtest

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// probeBound shortens the suite's waits for stores that are broken on
// purpose: the frame they never send is waited for this long.
const probeBound = 300 * time.Millisecond

// Each check passes a healthy store and fails one broken in the way the
// check exists to catch: the suite can fail.
func TestEachCheckFailsTheStoreItExistsToCatch(t *testing.T) {
	// A store that must pass is given the suite's own bound: with the short
	// one, a healthy store on a loaded machine failed a wait it would have
	// met. Only a store that must fail is given probeBound, so that its
	// missing frame costs 300ms, not the suite's bound.
	checks, passing := map[string]check{}, map[string]check{}
	// partitions: 10 keeps the reach check's probes at 404 live queries.
	for _, c := range (&suite{bound: probeBound, partitions: 10}).checks() {
		checks[c.name] = c
	}
	for _, c := range (&suite{bound: Convergence, partitions: 10}).checks() {
		passing[c.name] = c
	}
	for _, c := range []struct {
		check  string
		broken string
		wrap   func(*memstore.Store) mesh.Store
		caught string // part of the failure the broken store must cause; "" when it must pass
	}{
		{"TheVersionBumpsOnlyOnARealChange", "bumps the version on every put", bumpsOnEveryPut,
			"key order and whitespace are not a change"},
		{"AConditionalWriteLandsOnlyAtTheExpectedVersion", "ignores the expected version", ignoresExpectedVersion,
			"a stale expected version is refused"},
		{"AClosedStoreAnswersUnavailableNeverAbsent", "answers absent when it cannot read", absentWhenUnavailable,
			"unavailable is never absent"},
		{"AWriteOfAnUnrelatedTypeSendsNoFrameToAConstrainedQuery", "re-reads every query on every write", resetsOnEveryWrite,
			"only the Initial and the marker's frame"},
		{"WritesReachALiveQueryAsAddedUpdatedAndRemovedFrames", "drops Updated frames", dropsUpdates,
			"for Updated acme/Docs/a"},
		{"ConcurrentLiveQueriesAndWritersConvergeToAFreshInitial", "drops Updated frames", dropsUpdates,
			"for the live result to equal a fresh Initial"},
		{"AnUnanchoredQueryIsRefusedUnlessItDeclaresPartitionsAll", "serves unanchored queries", servesUnanchored,
			"an unanchored query is refused"},
		{"EveryWriteIsAnnouncedWithItsPathOpAndNodeType", "announces nothing", announcesNothing,
			"for INSERT acme/n"},
		{"TheInitialIsOrderedBySortFieldThenPath", "ignores the sort", ignoresSort,
			"the tie on m broken by path"},
		{"SecurityNodesWhosePathsDifferOnlyInCaseAreBothMaterialised", "folds security paths into one key", foldsSecurityPaths,
			"both policies are in the materialisation"},
		{"EveryWriteOfAGatedTypeMovesTheSecurityVersionAndNoOtherWriteDoes", "leaves the version where it was on a delete", deletesUnversioned,
			"Delete that deletes a node of the gated type"},
		{"AmongThousandsOfLiveQueriesEachWriteReachesExactlyThoseItChanges", "misses one partition's queries", missesAPartition,
			"must receive exactly the frames of the writes that change its result"},
		{"AmongThousandsOfLiveQueriesEachWriteReachesExactlyThoseItChanges", "sends every write to every query", sendsEveryWrite,
			"must receive exactly the frames of the writes that change its result"},
		{"AQueryNamingManyPartitionsAndAGlobalSatelliteSeesWritesToEachOfThem", "misses a global satellite's writes", missesGlobalSatellites,
			"for Added _Access/g1"},
		{"AnObserverThatPanicsOnADeliveryEndsOnlyItsOwnSubscription", "swallows its observers' panics", swallowsObserverPanics,
			"the panicking subscription ends"},
		// The control of the controls: a fault a check does not look at passes it.
		{"TheFirstFrameIsTheInitialWithTheFullMatchingSet", "ignores the sort", ignoresSort, ""},
	} {
		ch, ok := checks[c.check]
		require.True(t, ok, "no check named %s", c.check)
		t.Run(c.check+"/"+strings.ReplaceAll(c.broken, " ", "_"), func(t *testing.T) {
			healthy := runProbe(t, passing[c.check], newMemstore(t))
			require.False(t, healthy.failed, "the healthy store passes:\n%s", healthy.report())

			if c.caught == "" {
				broken := runProbe(t, passing[c.check], c.wrap(newMemstore(t)))
				assert.False(t, broken.failed, "a store that %s passes a check that does not look at it:\n%s", c.broken, broken.report())
				return
			}
			broken := runProbe(t, ch, c.wrap(newMemstore(t)))
			// With probeBound, a wait the broken store does meet can trip
			// first on a loaded machine, and the check then fails for
			// another reason: that run shows nothing either way, and is
			// run again (a few times at most).
			for attempt := 1; attempt < 3 && broken.failed && !strings.Contains(broken.report(), c.caught); attempt++ {
				t.Logf("attempt %d failed for another reason, run again:\n%s", attempt, broken.report())
				broken = runProbe(t, ch, c.wrap(newMemstore(t)))
			}
			require.True(t, broken.failed, "a store that %s fails the check", c.broken)
			assert.Contains(t, broken.report(), c.caught, "it fails for the reason the check exists")
		})
	}
}

func newMemstore(t testing.TB) *memstore.Store {
	s, err := memstore.New(memstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// probe is a testing.TB that records failures instead of failing the test
// it runs in, so a check can be run against a store that must fail it.
type probe struct {
	testing.TB // the real test: Cleanup, Log, Name, TempDir
	mu         sync.Mutex
	failed     bool
	skipped    bool
	msgs       []string
}

func (p *probe) Helper() {}

func (p *probe) Errorf(format string, args ...any) { p.record(fmt.Sprintf(format, args...)) }
func (p *probe) Error(args ...any)                 { p.record(fmt.Sprint(args...)) }
func (p *probe) Fail()                             { p.record("") }
func (p *probe) FailNow()                          { p.Fail(); runtime.Goexit() }
func (p *probe) Fatalf(format string, args ...any) { p.Errorf(format, args...); runtime.Goexit() }
func (p *probe) Fatal(args ...any)                 { p.Error(args...); runtime.Goexit() }
func (p *probe) Skip(args ...any)                  { p.skip() }
func (p *probe) Skipf(string, ...any)              { p.skip() }
func (p *probe) SkipNow()                          { p.skip() }

func (p *probe) Failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

func (p *probe) Skipped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.skipped
}

func (p *probe) record(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed = true
	if msg != "" {
		p.msgs = append(p.msgs, msg)
	}
}

func (p *probe) skip() {
	p.mu.Lock()
	p.skipped = true
	p.mu.Unlock()
	runtime.Goexit()
}

type probeResult struct {
	failed, skipped bool
	msgs            []string
}

func (r probeResult) report() string {
	if len(r.msgs) == 0 {
		return "(no messages)"
	}
	return strings.Join(r.msgs, "\n")
}

// runProbe runs one check on its own goroutine (FailNow ends it there).
func runProbe(t *testing.T, c check, svc mesh.Store) probeResult {
	t.Helper()
	p := &probe{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(p, svc)
	}()
	// A ceiling for a hang, above every bound a check waits on (at 30s, the
	// reach check's hundreds of live queries came near it on a loaded
	// machine).
	const hang = 2 * Convergence
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("check %s did not return within %s", c.name, hang)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return probeResult{failed: p.failed, skipped: p.skipped, msgs: slices.Clone(p.msgs)}
}

// Every method of mesh.Store is named either a write method, which the
// security version row writes through, or a read method: a write method
// added to mesh.Store fails here until the row covers it. Control: a
// method named by neither list is reported (the check below is the one
// that would fail).
func TestEveryStoreMethodIsAReadOrAWriteTheSecurityVersionRowCovers(t *testing.T) {
	named := map[string]string{}
	for _, m := range storeWriteMethods() {
		named[m] = "write"
	}
	for _, m := range storeReadMethods() {
		require.NotContains(t, named, m, "%s is named twice", m)
		named[m] = "read"
	}
	iface := reflect.TypeFor[mesh.Store]()
	for i := range iface.NumMethod() {
		m := iface.Method(i).Name
		assert.Contains(t, named, m, "mesh.Store.%s is neither a read nor a write the security version row covers", m)
	}
	assert.Len(t, named, iface.NumMethod(), "every name is a method of mesh.Store")
	written := map[string]bool{}
	for _, w := range securityWrites() {
		written[w.method] = true
	}
	for _, m := range storeWriteMethods() {
		assert.True(t, written[m], "the row writes through %s", m)
	}
	assert.NotContains(t, named, "Subscribe", "control: a name that is no method of mesh.Store is not in the lists")
}

// The broken stores: a real store with one fault each.

// versionHeld is a store whose Delete leaves its security version where it
// was before the Delete (until the next Put).
type versionHeld struct {
	wrapped
	mu   sync.Mutex
	held *mesh.SecurityVersion
}

func deletesUnversioned(s *memstore.Store) mesh.Store { return &versionHeld{wrapped: wrapped{s}} }

func (v *versionHeld) Delete(ctx context.Context, path string) error {
	before, err := v.Store.SecurityVersion(ctx)
	if err != nil {
		return err
	}
	v.mu.Lock()
	if v.held == nil {
		v.held = &before
	}
	v.mu.Unlock()
	return v.Store.Delete(ctx, path)
}

func (v *versionHeld) release() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.held = nil
}

func (v *versionHeld) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	v.release()
	return v.Store.Put(ctx, n)
}

func (v *versionHeld) PutIfVersion(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	v.release()
	return v.Store.PutIfVersion(ctx, n, expected)
}

func (v *versionHeld) SecurityVersion(ctx context.Context) (mesh.SecurityVersion, error) {
	v.mu.Lock()
	held := v.held
	v.mu.Unlock()
	if held != nil {
		return *held, nil
	}
	return v.Store.SecurityVersion(ctx)
}

func (v *versionHeld) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	snap, err := v.Store.SecurityNodes(ctx)
	v.mu.Lock()
	if v.held != nil {
		snap.Version = *v.held
	}
	v.mu.Unlock()
	return snap, err
}

type wrapped struct{ *memstore.Store }

type bumping struct {
	wrapped
	mu    sync.Mutex
	extra int64
}

func bumpsOnEveryPut(s *memstore.Store) mesh.Store { return &bumping{wrapped: wrapped{s}} }

func (b *bumping) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	stored, err := b.Store.Put(ctx, n)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.extra++
	stored.Version += b.extra
	return stored, err
}

type lastWriterWins struct{ wrapped }

func ignoresExpectedVersion(s *memstore.Store) mesh.Store { return lastWriterWins{wrapped{s}} }

func (l lastWriterWins) PutIfVersion(ctx context.Context, n mesh.Node, _ int64) (mesh.Node, error) {
	return l.Put(ctx, n)
}

type absent struct{ wrapped }

func absentWhenUnavailable(s *memstore.Store) mesh.Store { return absent{wrapped{s}} }

func (a absent) Get(path string) rx.Observable[mesh.Node] {
	return rx.Catch(a.Store.Get(path), func(error) rx.Observable[mesh.Node] { return rx.Empty[mesh.Node]() })
}

var _ io.Closer = absent{}

type resetting struct {
	wrapped
	writes *rx.Subject[struct{}]
}

func resetsOnEveryWrite(s *memstore.Store) mesh.Store {
	return resetting{wrapped{s}, rx.NewSubject[struct{}]()}
}

// Query re-reads the whole query on every write, as a listener that cannot
// classify would. The re-read runs before the write returns, so its Reset
// precedes the frames of later writes.
func (r resetting) Query(q string) rx.Observable[mesh.Change] {
	rereads := rx.SelectMany(r.writes, func(struct{}) rx.Observable[mesh.Change] {
		return rx.Map(rx.Take(r.Store.Query(q), 1), func(c mesh.Change) mesh.Change { c.Kind = mesh.Reset; return c })
	})
	return rx.Merge(r.Store.Query(q), rereads)
}

func (r resetting) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	defer r.writes.OnNext(struct{}{})
	return r.Store.Put(ctx, n)
}

func (r resetting) Delete(ctx context.Context, path string) error {
	defer r.writes.OnNext(struct{}{})
	return r.Store.Delete(ctx, path)
}

type dropping struct{ wrapped }

func dropsUpdates(s *memstore.Store) mesh.Store { return dropping{wrapped{s}} }

func (d dropping) Query(q string) rx.Observable[mesh.Change] {
	return rx.Filter(d.Store.Query(q), func(c mesh.Change) bool { return c.Kind != mesh.Updated })
}

type partitionMissed struct{ wrapped }

// missesAPartition loses the frames of the queries of one partition among
// many, as an index of live queries that misfiled it would.
func missesAPartition(s *memstore.Store) mesh.Store { return partitionMissed{wrapped{s}} }

func (m partitionMissed) Query(q string) rx.Observable[mesh.Change] {
	if !strings.Contains(q, "r07/") {
		return m.Store.Query(q)
	}
	return rx.Filter(m.Store.Query(q), func(c mesh.Change) bool { return c.Kind == mesh.Initial })
}

type satelliteMissed struct{ wrapped }

// missesGlobalSatellites loses the live frames of global satellites, as an
// index that filed a query reading one with those reading partitions only
// would.
func missesGlobalSatellites(s *memstore.Store) mesh.Store { return satelliteMissed{wrapped{s}} }

func (m satelliteMissed) Query(q string) rx.Observable[mesh.Change] {
	return rx.Filter(m.Store.Query(q), func(c mesh.Change) bool {
		return c.Kind == mesh.Initial || !slices.ContainsFunc(c.Items, func(n mesh.Node) bool { return strings.HasPrefix(n.Path, "_") })
	})
}

type broadcasting struct {
	wrapped
	writes *rx.Subject[mesh.Node]
}

// sendsEveryWrite sends each written node to every live query as an
// Updated frame, as a store that does not classify writes would.
func sendsEveryWrite(s *memstore.Store) mesh.Store {
	return broadcasting{wrapped{s}, rx.NewSubject[mesh.Node]()}
}

func (b broadcasting) Query(q string) rx.Observable[mesh.Change] {
	return rx.Merge(b.Store.Query(q), rx.Map[mesh.Node](b.writes, func(n mesh.Node) mesh.Change {
		return mesh.Change{Kind: mesh.Updated, Items: []mesh.Node{n}}
	}))
}

func (b broadcasting) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	stored, err := b.Store.Put(ctx, n)
	if err == nil {
		b.writes.OnNext(stored)
	}
	return stored, err
}

type unanchoredServed struct{ wrapped }

func servesUnanchored(s *memstore.Store) mesh.Store { return unanchoredServed{wrapped{s}} }

func (u unanchoredServed) Query(q string) rx.Observable[mesh.Change] {
	if !strings.Contains(q, "partitions:all") && !strings.Contains(q, "namespace:") && !strings.Contains(q, "path:") {
		q += " partitions:all"
	}
	return u.Store.Query(q)
}

type silent struct{ wrapped }

type panicSwallowed struct{ wrapped }

// swallowsObserverPanics recovers its observers' panics and goes on
// delivering to them, as a store would that kept the process alive but not
// its subscriber's stream whole (the frame it panicked on is lost to it).
func swallowsObserverPanics(s *memstore.Store) mesh.Store { return panicSwallowed{wrapped{s}} }

func (p panicSwallowed) Query(q string) rx.Observable[mesh.Change] {
	return swallowing(p.Store.Query(q))
}
func (p panicSwallowed) Changes() rx.Observable[mesh.ChangeNotice] {
	return swallowing(p.Store.Changes())
}

func swallowing[T any](src rx.Observable[T]) rx.Observable[T] {
	return rx.Create(func(ctx context.Context, o rx.Observer[T]) {
		sub := src.Subscribe(rx.NewObserver(func(v T) {
			defer func() { _ = recover() }()
			o.OnNext(v)
		}, o.OnError, o.OnCompleted))
		context.AfterFunc(ctx, sub.Unsubscribe)
	})
}

func announcesNothing(s *memstore.Store) mesh.Store { return silent{wrapped{s}} }

func (silent) Changes() rx.Observable[mesh.ChangeNotice] { return rx.Never[mesh.ChangeNotice]() }

type unsorted struct{ wrapped }

func ignoresSort(s *memstore.Store) mesh.Store { return unsorted{wrapped{s}} }

// Query answers in path order, whatever the query's sort says.
func (u unsorted) Query(q string) rx.Observable[mesh.Change] {
	return rx.Map(u.Store.Query(q), func(c mesh.Change) mesh.Change {
		c.Items = slices.Clone(c.Items)
		slices.SortFunc(c.Items, func(a, b mesh.Node) int { return strings.Compare(a.Path, b.Path) })
		return c
	})
}

// The slow-subscriber rule fails a store whose writer waits for a blocked
// subscriber (frames delivered under a lock the writer needs, as memstore
// once did on the writer's own goroutine) and one that queues every frame
// for it (memstore with a queue bound larger than the writes).
func TestTheSlowSubscriberRuleFailsWaitingWritersAndUnboundedQueues(t *testing.T) {
	slowRule := func(bound time.Duration) check {
		for _, c := range (&suite{bound: bound}).checks() {
			if c.name == "ABlockedSubscriberHoldsUpNoWriterAndCatchesUpOnRelease" {
				return c
			}
		}
		require.FailNow(t, "no slow-subscriber check in the suite")
		return check{}
	}
	ch := slowRule(probeBound)

	// The healthy store is given the suite's own bound, as in
	// TestEachCheckFailsTheStoreItExistsToCatch: with probeBound, a wait it
	// meets could trip on a loaded machine.
	healthy := runProbe(t, slowRule(Convergence), newMemstore(t))
	require.False(t, healthy.failed, "the healthy store passes:\n%s", healthy.report())

	waiting := runProbe(t, ch, writerWaitsForReaders(newMemstore(t)))
	require.True(t, waiting.failed, "a store whose writer waits for its subscribers fails the rule")
	assert.Contains(t, waiting.report(), "a writer waited for a blocked subscriber")

	unbounded, err := memstore.New(memstore.Options{QueueFrames: 10 * SlowWrites})
	require.NoError(t, err)
	t.Cleanup(func() { _ = unbounded.Close() })
	// The full bound here: a heap that keeps growing slows the writes it
	// measures (GC), and this control must fail on memory, not on pace.
	queueing := runProbe(t, slowRule(Convergence), unbounded)
	require.True(t, queueing.failed, "a store that queues every frame for a blocked subscriber fails the rule")
	assert.Contains(t, queueing.report(), "the store's memory stays bounded")
}

// waitingWriter delivers each frame holding a lock its writes take, so a
// blocked subscriber blocks every writer, whatever the writer's context.
type waitingWriter struct {
	wrapped
	mu *sync.Mutex
}

func writerWaitsForReaders(s *memstore.Store) mesh.Store {
	return waitingWriter{wrapped{s}, &sync.Mutex{}}
}

func (w waitingWriter) Query(q string) rx.Observable[mesh.Change] {
	return rx.Create(func(ctx context.Context, o rx.Observer[mesh.Change]) {
		sub := w.Store.Query(q).Subscribe(rx.NewObserver(func(c mesh.Change) {
			w.mu.Lock()
			defer w.mu.Unlock()
			o.OnNext(c)
		}, o.OnError, o.OnCompleted))
		context.AfterFunc(ctx, sub.Unsubscribe)
	})
}

func (w waitingWriter) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.Store.Put(ctx, n)
}

// foldingSecurity keeps one security node per path folded to lower case,
// as memstore's materialisation once did: a deny in a case variant is lost.
type foldingSecurity struct{ wrapped }

func foldsSecurityPaths(s *memstore.Store) mesh.Store { return &foldingSecurity{wrapped{s}} }

func (f *foldingSecurity) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	snap, err := f.Store.SecurityNodes(ctx)
	seen := map[string]bool{}
	var kept []mesh.Node
	for _, n := range snap.Nodes {
		if !seen[strings.ToLower(n.Path)] {
			seen[strings.ToLower(n.Path)] = true
			kept = append(kept, n)
		}
	}
	snap.Nodes = kept
	return snap, err
}
