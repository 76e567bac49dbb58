package meshtest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The slow-subscriber rule's sizes: SlowWrites writes of SlowContentBytes
// each, cycling over SlowPaths nodes, while one subscriber is blocked. A
// store that queued every frame for it would hold SlowWrites ×
// SlowContentBytes (20 MB); MaxSlowHeapGrowth is what it may hold instead.
const (
	SlowWrites        = 10_000
	SlowPaths         = 50
	SlowContentBytes  = 2048
	MaxSlowHeapGrowth = 8 << 20
)

// slowSubscriber: a subscriber blocked inside OnNext holds up nobody but
// itself. While it is blocked, SlowWrites writes each return within their
// context and the process's heap stays bounded; once released, its frames
// (or a Reset standing for those it fell behind on) bring it to the store's
// state.
func (s *suite) slowSubscriber(t testing.TB, svc mesh.Store) {
	const q = "namespace:acme/Slow"
	filler := strings.Repeat("x", SlowContentBytes)
	content := func(i int) []byte { return fmt.Appendf(nil, `{"i":%d,"fill":%q}`, i, filler) }

	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // a failing check must not leave the subscriber blocked
	blocked := make(chan struct{})
	var blockOnce sync.Once
	// The blocked subscriber waits in its first frame after the Initial.
	slow := subscribeLiveGated(svc, q, func(c mesh.Change) {
		if c.Kind != mesh.Initial {
			blockOnce.Do(func() {
				close(blocked)
				<-release
			})
		}
	})
	t.Cleanup(slow.sub.Unsubscribe)
	_, err := firstErr(s.bound, rx.Filter[liveState](slow.state, func(st liveState) bool { return st.initial }))
	require.NoError(t, err, "query %s: waiting (at most %s) for the Initial", q, s.bound)

	put(t, svc, withContent(node("acme/Slow/n00", "Slow"), string(content(-1))))
	select {
	case <-blocked:
	case <-time.After(s.bound):
		require.FailNow(t, "the subscriber was never blocked", "waited %s for the frame of the first write", s.bound)
	}

	heapBefore := liveHeap()
	progress := make(chan int, 1)
	result := make(chan error, 1)
	go func() {
		for i := range SlowWrites {
			// Each write gets its own bound: a store that makes a writer wait
			// for a reader would meet it, or ignore it and hang.
			ctx, cancel := context.WithTimeout(context.Background(), Convergence)
			n := withContent(node(fmt.Sprintf("acme/Slow/n%02d", i%SlowPaths), "Slow"), string(content(i)))
			_, err := svc.Put(ctx, n)
			cancel()
			if err != nil {
				result <- fmt.Errorf("write %d with a subscriber blocked: %w", i, err)
				return
			}
			select {
			case progress <- i:
			default:
			}
		}
		result <- nil
	}()
	// The writer must keep moving: no s.bound passes without a write returning.
	var writeErr error
	for done := false; !done; {
		select {
		case writeErr = <-result:
			done = true
		case <-progress:
		case <-time.After(s.bound):
			unblock() // let the writer finish so nothing outlives the check
			writeErr = <-result
			require.FailNow(t, "a writer waited for a blocked subscriber",
				"no write returned within %s while one subscriber was blocked (then released: %v)", s.bound, writeErr)
		}
	}
	require.NoError(t, writeErr, "every write returns within its context while a subscriber is blocked")

	grown := int64(liveHeap()) - int64(heapBefore)
	assert.Less(t, grown, int64(MaxSlowHeapGrowth),
		"the store's memory stays bounded while a subscriber is blocked: the heap grew %d bytes over %d writes of %d bytes",
		grown, SlowWrites, SlowContentBytes)

	unblock()
	want := fingerprintOf(initialOf(t, s.bound, svc, q).Items)
	got, err := firstErr(s.bound, rx.Filter[liveState](slow.state, func(st liveState) bool { return st.rows == want }))
	require.NoError(t, err, "query %s: waiting (at most %s) after release for the blocked subscriber to reach the store's state\n want %s\n have %s\n error %v",
		q, s.bound, want, slow.state.Value().rows, slow.rec.Err())
	assert.Equal(t, want, got.rows)
	assert.NoError(t, slow.rec.GrammarErr())
	assert.NoError(t, slow.rec.Err())
	resets := 0
	for _, c := range slow.rec.Values() {
		if c.Kind == mesh.Reset {
			resets++
		}
	}
	t.Logf("the released subscriber caught up with %d frames, %d of them Resets", len(slow.rec.Values()), resets)
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// subscribeLiveGated is subscribeLive with gate called first in every
// OnNext, on the delivering goroutine: a gate that blocks is a blocked
// subscriber.
func subscribeLiveGated(svc mesh.Store, q string, gate func(mesh.Change)) *liveResult {
	l := &liveResult{q: q, rec: rxtest.NewRecorder[mesh.Change](nil), state: rx.NewBehaviorSubject(liveState{})}
	patch := patcher()
	l.sub = svc.Query(q).Subscribe(rx.NewObserver(
		func(c mesh.Change) {
			gate(c)
			st := patch(c)
			l.rec.OnNext(c)
			l.state.OnNext(st)
		},
		l.rec.OnError,
		l.rec.OnCompleted,
	))
	return l
}
