// Package mailbox gives each subscriber of a store its own bounded queue of
// deliveries, drained on a goroutine of its own, so that a slow subscriber
// slows only its own stream, never a writer or another subscriber.
package mailbox

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/meshrx/meshrx/mesh"
)

// DefaultBound is the bound stores use for a subscriber's queue when their
// options leave it zero.
const DefaultBound = 1024

// Mailbox is one subscriber's bounded queue of deliveries. A writer pushes
// under the store's lock and returns: it never runs the subscriber's code
// and never waits for it. A drain delivers the queue on a goroutine of its
// own, started when the queue goes from idle to busy and ended when it is
// empty again, so an idle subscriber costs no goroutine.
//
// A subscriber that falls behind by more than Bound deliveries has its queue
// collapsed: the pending deliveries are dropped and the drain, when the
// subscriber catches up, asks its collapse function for one delivery that
// stands for all of them (a live query's Reset with the current result).
// Memory stays bounded and nothing is lost.
type Mailbox[T any] struct {
	// Bound is how many deliveries may wait before the queue collapses;
	// set it before the first Push.
	Bound int

	mu        sync.Mutex
	queue     []queued[T]
	pushed    uint64 // deliveries pushed so far, dropped ones included
	delivered uint64 // deliveries made (or covered by a collapsed one) so far
	waiters   []waiter
	collapsed bool   // deliveries were dropped: the next one is collapse()'s
	covered   uint64 // what the collapsed delivery stands for, set by Reset
	ended     bool   // the stream ends after what is queued
	running   bool   // a drain owns delivery
	done      bool   // the subscriber left: deliver nothing more
}

// queued is one pending delivery and its place in the push order.
type queued[T any] struct {
	v   T
	seq uint64
}

// waiter is a settle waiting for delivery up to seq.
type waiter struct {
	seq  uint64
	done chan struct{}
}

// Push queues v. It reports whether the caller must start a drain (go
// m.Drain(...)); it never blocks on the subscriber.
func (m *Mailbox[T]) Push(v T) (start bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done || m.ended {
		return false
	}
	m.pushed++
	switch {
	case m.collapsed:
		// Covered by the collapsed delivery, computed when it is sent.
	case len(m.queue) >= m.Bound:
		m.queue = nil // Release what the subscriber will never need
		m.collapsed = true
	default:
		m.queue = append(m.queue, queued[T]{v: v, seq: m.pushed})
	}
	return m.claim()
}

// End marks the stream as ending after what is queued.
func (m *Mailbox[T]) End() (start bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done || m.ended {
		return false
	}
	m.ended = true
	return m.claim()
}

// Collapse drops what is queued and makes the next delivery collapse()'s,
// standing for everything queued before it: for a subscriber whose frames
// the writer cannot compute (a limited query, whose result only a read
// gives). Like Push it reports whether the caller must start a drain.
func (m *Mailbox[T]) Collapse() (start bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done || m.ended {
		return false
	}
	m.pushed++
	m.queue = nil
	m.collapsed = true
	return m.claim()
}

// Hold makes the caller the drain (for delivering a first value itself);
// writers meanwhile queue without starting one. The caller must then call
// Drain or Release.
func (m *Mailbox[T]) Hold() {
	m.mu.Lock()
	m.running = true
	m.mu.Unlock()
}

// Release ends a hold. It reports whether deliveries queued meanwhile need
// a drain, which the caller must then start; otherwise the mailbox is idle.
func (m *Mailbox[T]) Release() (start bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.done && (len(m.queue) > 0 || m.collapsed || m.ended) {
		return true // still running: the caller hands over to a drain
	}
	m.running = false
	return false
}

// Leave stops all delivery: the subscriber is gone.
func (m *Mailbox[T]) Leave() {
	m.mu.Lock()
	m.done = true
	m.queue = nil
	m.wakeAll()
	m.mu.Unlock()
}

// Settled returns a channel closed once everything pushed so far has been
// delivered (or the subscriber left or its stream ended), or nil when that
// is so already.
func (m *Mailbox[T]) Settled() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done || m.delivered >= m.pushed {
		return nil
	}
	w := waiter{seq: m.pushed, done: make(chan struct{})}
	m.waiters = append(m.waiters, w)
	return w.done
}

// advance records delivery up to seq and wakes the waiters it satisfies. The
// caller holds mu.
func (m *Mailbox[T]) advance(seq uint64) {
	m.delivered = max(m.delivered, seq)
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		if w.seq <= m.delivered {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	clear(m.waiters[len(kept):])
	m.waiters = kept
}

func (m *Mailbox[T]) wakeAll() {
	for _, w := range m.waiters {
		close(w.done)
	}
	m.waiters = nil
}

// claim takes delivery for a new drain if none runs. The caller holds mu.
func (m *Mailbox[T]) claim() bool {
	if m.running {
		return false
	}
	m.running = true
	return true
}

// Reset clears the collapsed state and what is queued. The caller uses it
// from collapse, atomically with the read the collapsed delivery carries.
func (m *Mailbox[T]) Reset() {
	m.mu.Lock()
	m.queue = nil
	m.collapsed = false
	m.covered = m.pushed
	m.mu.Unlock()
}

// AwaitAll waits, within ctx, until every channel is closed; it returns how
// many were still open when ctx ended, with ctx's error.
func AwaitAll(ctx context.Context, chans []<-chan struct{}) (int, error) {
	for i, c := range chans {
		select {
		case <-c:
		case <-ctx.Done():
			return len(chans) - i, context.Cause(ctx)
		}
	}
	return 0, nil
}

// Drain delivers until the queue is empty, outside every lock. collapse
// returns the deliveries that stand for dropped ones (none, e.g. when the
// store closed) and must call Reset; complete ends the stream.
//
// A panic in deliver, collapse or complete has no caller to go up to on a
// drain's own goroutine: it would end the process, every other subscriber
// with it. Drain recovers it, stops all delivery as Leave does (the
// subscriber's stream is broken), and hands it to failed with the stack,
// which ends the subscription; failed runs outside every lock of m.
func (m *Mailbox[T]) Drain(deliver func(T), collapse func() []T, complete func(), failed func(p any, stack []byte)) {
	defer func() {
		if p := recover(); p != nil {
			stack := debug.Stack()
			m.mu.Lock()
			m.done, m.running, m.queue = true, false, nil
			m.wakeAll()
			m.mu.Unlock()
			failed(p, stack)
		}
	}()
	for {
		m.mu.Lock()
		switch {
		case m.done:
			m.running = false
			m.mu.Unlock()
			return
		case m.collapsed:
			m.mu.Unlock()
			for _, v := range collapse() { // calls Reset
				deliver(v)
			}
			m.mu.Lock()
			m.advance(m.covered)
			m.mu.Unlock()
		case len(m.queue) > 0:
			q := m.queue[0]
			m.queue[0] = queued[T]{}
			m.queue = m.queue[1:]
			if len(m.queue) == 0 {
				m.queue = nil // let the backing array go
			}
			m.mu.Unlock()
			deliver(q.v)
			m.mu.Lock()
			m.advance(q.seq)
			m.mu.Unlock()
		case m.ended:
			m.done = true
			m.running = false
			m.wakeAll()
			m.mu.Unlock()
			complete()
			return
		default:
			m.running = false
			m.mu.Unlock()
			return
		}
	}
}

// EndPanicked ends a subscription whose observer panicked with p on a
// store's delivery goroutine (see Drain): it logs the panic with its stack
// and tells onError a *mesh.ObserverPanicError naming op. A panic in
// onError as well is logged, not raised: it too has no caller to go to.
// The caller has already stopped all delivery to the subscription.
func EndPanicked(log *slog.Logger, op string, onError func(error), p any, stack []byte) {
	if log == nil {
		log = slog.Default()
	}
	log.Error("mesh: an observer panicked on a store's delivery goroutine; ending its subscription",
		"subscription", op, "panic", fmt.Sprint(p), "stack", string(stack))
	defer func() {
		if p := recover(); p != nil {
			log.Error("mesh: an observer panicked again on the error ending its subscription",
				"subscription", op, "panic", fmt.Sprint(p))
		}
	}()
	onError(&mesh.ObserverPanicError{Op: op, Value: p})
}
