package rx

import (
	"sync"
	"sync/atomic"
)

// gate makes "nothing is delivered after Unsubscribe has returned" hold for
// notifications that start on a timer (or any goroutine the operator does
// not control). Use it so:
//
//	g := &gate{}
//	sc.onCancel(g.shut)              // before arming the timer
//	...
//	// in the timer callback:
//	if !g.enter(sc) { return }       // the subscription has ended
//	defer g.leave()
//	down.OnNext(v)                   // or OnError, OnCompleted
//
// enter fails once sc is cancelled; shut, run by the cancellation, waits for
// a delivery in flight on another goroutine to finish, so when Unsubscribe
// returns no callback is delivering and none will. A delivery that
// unsubscribes from inside itself (same goroutine) is not waited for. A
// delivery waiting for room downstream (a busy consumer) is released by the
// cancellation itself (scope.doneChan closes before the cleanups run), so
// shut cannot deadlock with it.
type gate struct {
	mu    sync.Mutex
	owner atomic.Uintptr // curg() of the delivering goroutine
}

// enter reports whether a delivery may start; if so the caller must leave.
func (g *gate) enter(sc *scope) bool {
	if sc.cancelled() {
		return false
	}
	g.mu.Lock()
	if sc.cancelled() {
		g.mu.Unlock()
		return false
	}
	g.owner.Store(curg())
	return true
}

func (g *gate) leave() {
	g.owner.Store(0)
	g.mu.Unlock()
}

// shut waits for a delivery in flight on another goroutine. Register it with
// the scope whose cancellation must stop deliveries.
func (g *gate) shut() {
	if g.owner.Load() == curg() {
		return
	}
	g.mu.Lock()
	g.mu.Unlock() //nolint:staticcheck // an empty critical section: waiting is the point
}
