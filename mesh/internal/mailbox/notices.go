package mailbox

import (
	"context"
	"log/slog"
	"sync"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// Gap stands, for a Changes subscriber that fell behind by more than its
// bound, for every notice it missed: anything may have changed, read again.
var Gap = mesh.ChangeNotice{Op: mesh.WriteUpdate}

// Notices is a store's Changes stream: hot, each subscription delivered
// from its own Mailbox on a goroutine of its own, so Announce never runs a
// subscriber's code or waits for it. Bound must be set before use.
type Notices struct {
	Bound int
	// Log receives the panics of subscribers' observers (EndPanicked); nil
	// means slog.Default().
	Log *slog.Logger

	mu     sync.Mutex
	closed bool
	subs   map[*watcher]struct{}
}

// watcher is one subscription.
type watcher struct {
	n   *Notices
	o   rx.Observer[mesh.ChangeNotice]
	box Mailbox[mesh.ChangeNotice]
}

// Starts are the drains an Announce or Close made due; Start runs them.
// The caller may hold its own locks until then.
type Starts []*watcher

// Start starts each drain on a goroutine of its own.
func (s Starts) Start() {
	for _, w := range s {
		go w.drain()
	}
}

func (w *watcher) drain() {
	w.box.Drain(w.o.OnNext, func() []mesh.ChangeNotice {
		w.box.Reset()
		return []mesh.ChangeNotice{Gap}
	}, w.o.OnCompleted, func(p any, stack []byte) {
		w.n.mu.Lock()
		delete(w.n.subs, w)
		w.n.mu.Unlock()
		EndPanicked(w.n.Log, "changes", w.o.OnError, p, stack)
	})
}

// Observable is the stream: a subscriber sees the notices announced after
// it subscribed, and completes after Close (at once if subscribed after).
func (n *Notices) Observable() rx.Observable[mesh.ChangeNotice] {
	return rx.Defer(func() rx.Observable[mesh.ChangeNotice] {
		w := &watcher{n: n, box: Mailbox[mesh.ChangeNotice]{Bound: n.Bound}}
		feed := rx.Create(func(_ context.Context, o rx.Observer[mesh.ChangeNotice]) {
			w.o = o
			n.mu.Lock()
			closed := n.closed
			if !closed {
				if n.subs == nil {
					n.subs = map[*watcher]struct{}{}
				}
				n.subs[w] = struct{}{}
			}
			n.mu.Unlock()
			if closed {
				o.OnCompleted()
			}
		})
		return rx.Finally(feed, func() {
			n.mu.Lock()
			delete(n.subs, w)
			n.mu.Unlock()
			w.box.Leave()
		})
	})
}

// Announce queues c for every subscriber and returns the drains it made
// due.
func (n *Notices) Announce(c mesh.ChangeNotice) Starts {
	var start Starts
	n.mu.Lock()
	for w := range n.subs {
		if w.box.Push(c) {
			start = append(start, w)
		}
	}
	n.mu.Unlock()
	return start
}

// Close completes every subscription after what it has queued, and any
// later one at once; it returns the drains that delivers.
func (n *Notices) Close() Starts {
	var start Starts
	n.mu.Lock()
	n.closed = true
	for w := range n.subs {
		if w.box.End() {
			start = append(start, w)
		}
	}
	clear(n.subs)
	n.mu.Unlock()
	return start
}

// Settled returns, for each subscriber with deliveries pending, a channel
// closed once it has caught up.
func (n *Notices) Settled() []<-chan struct{} {
	var pending []<-chan struct{}
	n.mu.Lock()
	for w := range n.subs {
		if c := w.box.Settled(); c != nil {
			pending = append(pending, c)
		}
	}
	n.mu.Unlock()
	return pending
}
