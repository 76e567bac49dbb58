package rx

import (
	"sync"
	"sync/atomic"
)

// sourcePin keeps the source of GroupBy and the Window operators subscribed while
// anyone still listens: the outer subscription holds one reference, and
// every live subscription to one of its groups or windows one more (Rx.NET's
// RefCountDisposable). When the last is released, up — the source's scope —
// is cancelled.
type sourcePin struct {
	mu sync.Mutex
	n  int
	up *scope
}

func newSourcePin(up *scope) *sourcePin { return &sourcePin{n: 1, up: up} }

// acquire takes a reference, unless the source is already released.
func (p *sourcePin) acquire() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return false
	}
	p.n++
	return true
}

func (p *sourcePin) release() {
	p.mu.Lock()
	p.n--
	last := p.n == 0
	p.mu.Unlock()
	if last {
		p.up.cancel()
	}
}

// pinnedSubject is a group or a window: a Subject whose subscriptions keep
// the operator's source subscribed until they end or it terminates.
type pinnedSubject[T any] struct {
	s   *Subject[T]
	pin *sourcePin
	op  string
}

func newPinnedSubject[T any](p *sourcePin, op string) *pinnedSubject[T] {
	return &pinnedSubject[T]{s: NewSubject[T](), pin: p, op: op}
}

func (g *pinnedSubject[T]) Subscribe(o Observer[T]) Subscription {
	mustObserver(o, g.op)
	sc := ensureScope(o)
	if !g.pin.acquire() {
		// The source was released: what the subject has (its end, if it
		// ended) is all there is.
		return g.s.Subscribe(inScope(o, sc))
	}
	r := &pinRef[T]{down: o, sc: sc, pin: g.pin}
	sc.onCancel(r.release)
	return g.s.Subscribe(r)
}

func (g *pinnedSubject[T]) rxNative() {}

// pinRef is one subscription's reference: released when it ends, or when
// the group or window terminates (whichever comes first).
type pinRef[T any] struct {
	down Observer[T]
	sc   *scope
	pin  *sourcePin
	done atomic.Bool
}

func (r *pinRef[T]) release() {
	if r.done.CompareAndSwap(false, true) {
		r.pin.release()
	}
}

func (r *pinRef[T]) OnNext(v T) { r.down.OnNext(v) }
func (r *pinRef[T]) OnError(err error) {
	defer r.release() // also when the observer panics
	r.down.OnError(err)
}
func (r *pinRef[T]) OnCompleted() {
	defer r.release()
	r.down.OnCompleted()
}
func (r *pinRef[T]) rxScope() *scope { return r.sc }
