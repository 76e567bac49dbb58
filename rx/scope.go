package rx

import (
	"sync"
	"sync/atomic"
)

// A scope is the cancellation state of one subscription chain. Operators that
// only transform values share their downstream's scope, so a synchronous
// source sees an unsubscription made anywhere below it with one atomic load
// per value. Operators whose upstream may end before their downstream does
// (Take, Concat, SelectMany, Retry, Timeout, ...) give that upstream a child
// scope. An operator cancels only scopes it created; the root is cancelled by
// whoever holds the Subscription.
type scope struct {
	done     atomic.Bool
	mu       sync.Mutex
	parent   *scope
	children *scope // the newest child; the others follow through next
	cleanups []func()
	doneCh   chan struct{} // made on demand by doneChan; closed by cancel

	// prev and next link the scope among its parent's children, and linked
	// says it is still in that list: an intrusive list, so that a child
	// costs no allocation beyond itself (a chain makes one per operator that
	// gives its upstream a child scope, per subscription). Guarded by the
	// parent's mu; once the parent's cancel has unlinked it, next is no
	// longer written and the parent walks the detached list without it.
	prev, next *scope
	linked     bool
}

func newScope() *scope { return &scope{} }

// Unsubscribe cancels the scope: it is the Subscription the chain returns.
func (s *scope) Unsubscribe() { s.cancel() }

func (s *scope) cancelled() bool { return s != nil && s.done.Load() }

func (s *scope) cancel() {
	if s == nil || !s.done.CompareAndSwap(false, true) {
		return
	}
	s.mu.Lock()
	children, cleanups, parent := s.children, s.cleanups, s.parent
	s.children, s.cleanups, s.parent = nil, nil, nil
	for c := children; c != nil; c = c.next {
		c.linked = false
	}
	if s.doneCh != nil {
		// Wakes producers waiting to deliver before anything else is
		// cancelled: a cleanup below may wait for them (see gate).
		close(s.doneCh)
	}
	s.mu.Unlock()
	if parent != nil {
		parent.forget(s)
	}
	for c := children; c != nil; {
		next := c.next
		c.cancel()
		c = next
	}
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
}

// doneChan returns a channel closed when the scope is cancelled; a nil scope
// is never cancelled. Producers waiting for a busy consumer select on it.
func (s *scope) doneChan() <-chan struct{} {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.doneCh == nil {
		ch := make(chan struct{})
		if s.done.Load() {
			// cancel has run (or is about to take mu and will not see
			// this channel): hand back a closed one without keeping it.
			close(ch)
			return ch
		}
		s.doneCh = ch
	}
	return s.doneCh
}

// onCancel runs f when the scope is cancelled, or at once if it already is.
func (s *scope) onCancel(f func()) {
	s.mu.Lock()
	if s.done.Load() {
		s.mu.Unlock()
		f()
		return
	}
	s.cleanups = append(s.cleanups, f)
	s.mu.Unlock()
}

// child returns a scope cancelled with s but cancellable on its own.
func (s *scope) child() *scope {
	c := &scope{}
	s.mu.Lock()
	if s.done.Load() {
		s.mu.Unlock()
		c.done.Store(true)
		return c
	}
	c.parent = s
	c.next = s.children
	if c.next != nil {
		c.next.prev = c
	}
	s.children, c.linked = c, true
	s.mu.Unlock()
	return c
}

func (s *scope) forget(c *scope) {
	s.mu.Lock()
	if c.linked {
		if c.prev != nil {
			c.prev.next = c.next
		} else {
			s.children = c.next
		}
		if c.next != nil {
			c.next.prev = c.prev
		}
		c.prev, c.next, c.linked = nil, nil, false
	}
	s.mu.Unlock()
}

// scoped is implemented by the observers of this package: it hands the chain's
// scope to the source they subscribe to.
type scoped interface{ rxScope() *scope }

// scopeOf returns o's scope, or nil when o is a plain observer.
func scopeOf[T any](o Observer[T]) *scope {
	if s, ok := o.(scoped); ok {
		return s.rxScope()
	}
	return nil
}

// ensureScope returns o's scope, or a new root scope when o has none.
func ensureScope[T any](o Observer[T]) *scope {
	if s := scopeOf(o); s != nil {
		return s
	}
	return newScope()
}

// inScope returns an observer carrying sc that forwards to o.
func inScope[T any](o Observer[T], sc *scope) Observer[T] {
	if scopeOf(o) == sc {
		return o
	}
	return &forward[T]{down: o, sc: sc}
}

type forward[T any] struct {
	down Observer[T]
	sc   *scope
}

func (f *forward[T]) OnNext(v T)        { f.down.OnNext(v) }
func (f *forward[T]) OnError(err error) { f.down.OnError(err) }
func (f *forward[T]) OnCompleted()      { f.down.OnCompleted() }
func (f *forward[T]) rxScope() *scope   { return f.sc }
