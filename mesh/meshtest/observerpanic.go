package meshtest

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// observerPanics: an observer that panics on a frame or notice the store
// delivers from its own goroutine ends only its own subscription, with a
// *mesh.ObserverPanicError; the process, the writers and every other
// subscriber of the same query and of Changes go on.
//
// Negative control, run by hand: without the recover in mailbox.Drain
// (memstore) or in pgstore's serve, the observer's panic ended the test
// binary ("panic: observer bug on a notice", "panic: observer bug on a live
// frame"): one subscriber's bug took every other one, and the process, down.
// TestEachCheckFailsTheStoreItExistsToCatch fails a store that recovers the
// panic but goes on delivering to the broken subscriber.
func (s *suite) observerPanics(t testing.TB, svc mesh.Store) {
	const q = "namespace:acme/Panic"
	calm := watchQuery(t, s.bound, svc, q)
	calm.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })

	var frames, notices atomic.Int32
	initial := make(chan struct{})
	panicky := rxtest.NewRecorder[mesh.Change](nil)
	sub := svc.Query(q).Subscribe(rx.NewObserver(func(c mesh.Change) {
		if c.Kind == mesh.Initial {
			panicky.OnNext(c)
			close(initial)
			return
		}
		frames.Add(1)
		panic("observer bug on a live frame")
	}, panicky.OnError, panicky.OnCompleted))
	t.Cleanup(sub.Unsubscribe)
	panickyNotices := rxtest.NewRecorder[mesh.ChangeNotice](nil)
	nsub := svc.Changes().Subscribe(rx.NewObserver(func(mesh.ChangeNotice) {
		notices.Add(1)
		panic("observer bug on a notice")
	}, panickyNotices.OnError, panickyNotices.OnCompleted))
	t.Cleanup(nsub.Unsubscribe)
	calmNotices := watchStream(t, s.bound, "changes", svc.Changes())
	select {
	case <-initial:
	case <-time.After(s.bound):
		require.FailNow(t, "no Initial for the panicking query", "waited %s", s.bound)
	}

	put(t, svc, node("acme/Panic/a", "Item"))
	calm.await(t, "Added a beside a panicking subscriber", kindOn(mesh.Added, "acme/Panic/a"))
	calmNotices.await(t, "the notice of a", func(n mesh.ChangeNotice) bool { return n.Path == "acme/Panic/a" })
	for _, rec := range []interface {
		WaitTerminated(time.Duration) bool
		Err() error
	}{panicky, panickyNotices} {
		require.True(t, rec.WaitTerminated(s.bound), "the panicking subscription ends (waited %s)", s.bound)
		var pe *mesh.ObserverPanicError
		assert.True(t, errors.As(rec.Err(), &pe), "its error is a *mesh.ObserverPanicError: %v", rec.Err())
	}

	// The store goes on: writes return, the calm subscribers see them, a
	// new query reads them; the ended ones are told nothing more.
	put(t, svc, node("acme/Panic/b", "Item"))
	calm.await(t, "Added b after the panic", kindOn(mesh.Added, "acme/Panic/b"))
	calmNotices.await(t, "the notice of b", func(n mesh.ChangeNotice) bool { return n.Path == "acme/Panic/b" })
	assert.ElementsMatch(t, []string{"acme/Panic/a", "acme/Panic/b"}, pathsOf(initialOf(t, s.bound, svc, q).Items))
	assert.Equal(t, int32(1), frames.Load(), "the ended query got no frame after the one it panicked on")
	assert.Equal(t, int32(1), notices.Load(), "the ended Changes subscription got no notice after the one it panicked on")
	assert.NoError(t, calm.rec.GrammarErr())
	assert.NoError(t, panicky.GrammarErr())
}
