package memstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// livelyProvider answers its Initial and then stays live, as a provider fed
// by configuration or another service does.
type livelyProvider struct{}

func (livelyProvider) Name() string { return "lively" }
func (livelyProvider) Query(*mesh.Query) rx.Observable[mesh.Change] {
	return rx.Concat(rx.Return(mesh.Change{Kind: mesh.Initial}), rx.Never[mesh.Change]())
}

// Close completes each live query once its queued frames are delivered
// (Store.Close): a write that returned before Close reaches a subscriber
// that was busy, then the query completes, with or without providers (one
// of which never completes by itself). Control run: with the store's
// close signal as the Querier's Until on every query (before the fix), the
// query completed as Close fired it and acme/Q/b's Added was lost: 2
// frames, not 3, in both subtests.
func TestCloseCompletesALiveQueryAfterTheFramesOfTheWritesBeforeIt(t *testing.T) {
	for _, c := range []struct {
		name      string
		providers []mesh.Provider
	}{{"without providers", nil}, {"with a provider that stays live", []mesh.Provider{livelyProvider{}}}} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, memstore.Options{Clock: rxtest.NewClock(), Providers: c.providers})
			rec, blocked, release := gated(t, s.Query("namespace:acme/Q"))
			put(t, s, "acme/Q/a", "Item", "")
			await(t, blocked, "the subscriber to block on acme/Q/a's frame")
			put(t, s, "acme/Q/b", "Item", "") // queued behind the busy subscriber

			require.NoError(t, s.Close())
			release()
			require.True(t, rec.WaitTerminated(bound), "the query ends after Close")
			assert.True(t, rec.Completed(), "Close completes the query: %v", rec.Err())
			assert.NoError(t, rec.GrammarErr())
			var got []string
			for _, f := range rec.Values() {
				got = append(got, f.Kind.String()+" "+describePaths(f.Items))
			}
			assert.Equal(t, []string{"initial ", "added acme/Q/a", "added acme/Q/b"}, got,
				"every frame of a write made before Close is delivered before the completion")
		})
	}
}

func describePaths(items []mesh.Node) string {
	out := ""
	for i, p := range paths(items) {
		if i > 0 {
			out += ","
		}
		out += p
	}
	return out
}

// namedProvider is livelyProvider under a name of its own: a fan-in needs
// its providers' names to differ.
type namedProvider struct {
	livelyProvider
	name string
}

func (p namedProvider) Name() string { return p.name }

// Close never waits for a subscriber, whatever the providers fanned in:
// ending each provider's part sends its fan-in a value, and a fan-in whose
// subscriber is busy takes only so many before the sender waits. Control
// run: with the close signal fired on Close's goroutine (the first form
// of the fix above) Close, with 40 providers and the subscriber blocked,
// waited out the bound: "Close waited for a blocked subscriber".
func TestCloseWaitsForNoSubscriberWhateverItsProviders(t *testing.T) {
	var providers []mesh.Provider
	for i := range 40 {
		providers = append(providers, namedProvider{name: fmt.Sprintf("p%02d", i)})
	}
	s := newStore(t, memstore.Options{Clock: rxtest.NewClock(), Providers: providers})
	rec, blocked, release := gated(t, s.Query("namespace:acme/Q"))
	put(t, s, "acme/Q/a", "Item", "")
	await(t, blocked, "the subscriber to block on acme/Q/a's frame")

	closed := make(chan struct{})
	go func() { _ = s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(bound):
		release()
		<-closed
		t.Fatal("Close waited for a blocked subscriber")
	}
	release()
	require.True(t, rec.WaitTerminated(bound), "the query ends once its subscriber is back")
	assert.True(t, rec.Completed(), "%v", rec.Err())
	assert.Len(t, rec.Values(), 2, "the Initial and acme/Q/a's frame")
}

// Close completes idle live queries on its own goroutine: an observer that
// panics on its completion must not take Close, or the other queries'
// completion, with it. Negative control, run by hand: without the recover
// in mailbox.Drain, Close panicked with "observer bug on completion" and
// the calm query was never completed.
func TestAnObserverPanickingOnItsCompletionLeavesCloseAndTheOtherQueriesWhole(t *testing.T) {
	s := newStore(t, memstore.Options{})
	panicky := s.Query("namespace:acme/A").Subscribe(rx.NewObserver[mesh.Change](nil, nil,
		func() { panic("observer bug on completion") }))
	defer panicky.Unsubscribe()
	calm := rxtest.Record[mesh.Change](nil, s.Query("namespace:acme/B"))
	defer calm.Unsubscribe()
	changes := rxtest.Record[mesh.ChangeNotice](nil, s.Changes())
	defer changes.Unsubscribe()

	require.NotPanics(t, func() { require.NoError(t, s.Close()) })
	assert.True(t, calm.WaitTerminated(bound), "the other query ends")
	assert.True(t, calm.Completed(), "and completes: %v", calm.Err())
	assert.True(t, changes.WaitTerminated(bound), "the Changes subscription ends")
	assert.Zero(t, s.Stats().LiveQueries)
}
