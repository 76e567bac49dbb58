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
//
// A scope is small (64 bytes) and operators embed the child scopes they make
// in their own per-subscription struct (initChild), so a child costs no
// allocation of its own; what runs at cancellation is an intrusive list of
// hooks, which an operator also embeds (addHook), so arming one costs none.
type scope struct {
	done atomic.Bool
	// linked says the scope is still in its parent's list of children.
	// Guarded by the parent's mu.
	linked   bool
	mu       sync.Mutex
	parent   *scope
	children *scope        // the newest child; the others follow through next
	hooks    *hook         // the newest hook; run newest first
	doneCh   chan struct{} // made on demand by doneChan; closed by cancel

	// prev and next link the scope among its parent's children: an
	// intrusive list, so that a child costs no allocation beyond itself (a
	// chain makes one per operator that gives its upstream a child scope,
	// per subscription). Guarded by the parent's mu; once the parent's
	// cancel has unlinked it, next is no longer written and the parent
	// walks the detached list without it.
	prev, next *scope
}

// canceller is implemented by operator state that must act when a scope is
// cancelled; a pointer to it fits in the interface without an allocation.
type canceller interface{ rxCancel() }

// hook is one entry of a scope's cancellation list. Operators embed one
// (with c set to themselves) and register it with addHook; onCancel makes
// one for a plain function. A hook is registered with one scope, once.
type hook struct {
	c    canceller
	next *hook
}

// funcCanceller runs a plain function as a hook; a func value fits in the
// interface without an allocation.
type funcCanceller func()

func (f funcCanceller) rxCancel() { f() }

func newScope() *scope { return &scope{} }

// Unsubscribe cancels the scope: it is the Subscription the chain returns.
func (s *scope) Unsubscribe() { s.cancel() }

func (s *scope) cancelled() bool { return s != nil && s.done.Load() }

func (s *scope) cancel() {
	if s == nil || !s.done.CompareAndSwap(false, true) {
		return
	}
	s.mu.Lock()
	children, hooks, parent := s.children, s.hooks, s.parent
	s.children, s.hooks, s.parent = nil, nil, nil
	for c := children; c != nil; c = c.next {
		c.linked = false
	}
	if s.doneCh != nil {
		// Wakes producers waiting to deliver before anything else is
		// cancelled, so that no cleanup below runs while one still waits.
		close(s.doneCh)
	}
	s.mu.Unlock()
	if parent != nil {
		parent.forget(s)
	}
	release(children, hooks)
}

// release cancels the children and runs the hooks that cancel detached. A
// hook may be a user's cleanup (Finally's f, Using's release): if one
// panics, the rest still run before the panic goes on up, since the scope
// is done and no later cancel would reach them.
func release(c *scope, h *hook) {
	returned := false
	defer func() {
		if !returned {
			release(c, h) // what follows the one that panicked
		}
	}()
	for c != nil {
		cur := c
		c = c.next
		cur.cancel()
	}
	for h != nil {
		cur := h
		h = h.next
		cur.next = nil
		cur.c.rxCancel()
	}
	returned = true
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
// Hooks run newest first.
func (s *scope) onCancel(f func()) {
	if s.done.Load() {
		f()
		return
	}
	s.addHook(&hook{c: funcCanceller(f)})
}

// addHook runs h.c.rxCancel() when the scope is cancelled, or at once if it
// already is. h must not be registered anywhere else.
func (s *scope) addHook(h *hook) {
	s.mu.Lock()
	if s.done.Load() {
		s.mu.Unlock()
		h.c.rxCancel()
		return
	}
	h.next, s.hooks = s.hooks, h
	s.mu.Unlock()
}

// child returns a scope cancelled with s but cancellable on its own.
func (s *scope) child() *scope {
	c := &scope{}
	s.initChild(c)
	return c
}

// initChild makes c, a zero scope the caller embeds in its own state, a
// child of s: cancelled with s but cancellable on its own. c must not be
// copied afterwards.
func (s *scope) initChild(c *scope) {
	s.mu.Lock()
	if s.done.Load() {
		s.mu.Unlock()
		c.done.Store(true)
		return
	}
	c.parent = s
	c.next = s.children
	if c.next != nil {
		c.next.prev = c
	}
	s.children, c.linked = c, true
	s.mu.Unlock()
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

// direct returns the observer a stage delivers to: behind any forward
// (which only carries a scope, as subscribeRoot's does), so that a value
// costs one call, not two. The stage takes its scope from o first
// (ensureScope), and subscribes nothing with the result, which carries no
// scope.
func direct[T any](o Observer[T]) Observer[T] {
	for {
		f, ok := o.(*forward[T])
		if !ok {
			return o
		}
		o = f.down
	}
}

type forward[T any] struct {
	down Observer[T]
	sc   *scope
}

func (f *forward[T]) OnNext(v T)        { f.down.OnNext(v) }
func (f *forward[T]) OnError(err error) { f.down.OnError(err) }
func (f *forward[T]) OnCompleted()      { f.down.OnCompleted() }
func (f *forward[T]) rxScope() *scope   { return f.sc }
