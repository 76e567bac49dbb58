package rx

// Observer receives the notifications of one subscription: any number of
// OnNext calls, then at most one of OnError or OnCompleted. Calls into one
// observer never overlap.
type Observer[T any] interface {
	OnNext(T)
	OnError(error)
	OnCompleted()
}

// Subscription ends a subscription. Unsubscribe is idempotent, safe to call
// from any goroutine (including from inside a notification or a user
// function) and never blocks: like Rx.NET's Dispose it does not wait for an
// observer, even one blocked inside OnNext on another goroutine. Once it has
// returned no notification starts; one that another goroutine had already
// started may still be running, and is the last (see the package doc).
type Subscription interface {
	Unsubscribe()
}

// Observable is a cold stream: every Subscribe starts an independent run of
// its work and delivers to the given observer.
type Observable[T any] interface {
	Subscribe(Observer[T]) Subscription
}

// NewObserver builds an Observer from functions; a nil function ignores that
// notification. Pass an error function unless dropping failures is intended.
func NewObserver[T any](next func(T), err func(error), done func()) Observer[T] {
	return &funcObserver[T]{next: next, err: err, done: done}
}

type funcObserver[T any] struct {
	next func(T)
	err  func(error)
	done func()
}

func (o *funcObserver[T]) OnNext(v T) {
	if o.next != nil {
		o.next(v)
	}
}

func (o *funcObserver[T]) OnError(err error) {
	if o.err != nil {
		o.err(err)
	}
}

func (o *funcObserver[T]) OnCompleted() {
	if o.done != nil {
		o.done()
	}
}

// observableFunc is the Observable of every operator in this package.
type observableFunc[T any] func(Observer[T]) Subscription

func (f observableFunc[T]) Subscribe(o Observer[T]) Subscription {
	mustObserver(o, "Observable")
	if _, ok := o.(scoped); ok {
		return f(o) // inside a chain: its outermost Subscribe releases it
	}
	return subscribeRoot(o, f)
}

// subscribeRoot subscribes the caller's own observer o (one with no scope:
// the outermost Subscribe of a chain) through sub, making the chain's root
// scope here, so that a panic out of Subscribe (a user function, a clock,
// over a source delivering inside Subscribe) releases what the chain holds
// — timers, inner subscriptions, cleanups — as First, Collect and All do:
// the caller has no Subscription to end it with. The forward only carries
// that scope: fused stages see through it (opsOf), and other operators and
// sources deliver past it (direct), so a value costs one call.
func subscribeRoot[T any](o Observer[T], sub func(Observer[T]) Subscription) Subscription {
	r := &rootObserver[T]{}
	r.forward = forward[T]{down: o, sc: &r.sc}
	subscribed := false
	defer func() {
		if !subscribed {
			r.sc.cancel()
		}
	}()
	s := sub(&r.forward)
	subscribed = true
	return s
}

// rootObserver is a chain's root scope and the forward to the caller's
// observer that carries it, in one allocation (ensureScope would have made
// the scope).
type rootObserver[T any] struct {
	forward[T]
	sc scope
}

func (observableFunc[T]) rxNative() {}

// native marks observables of this package: they keep the grammar and honour
// scopes, so operators need not guard them.
type native interface{ rxNative() }

// noSubscription is returned where there is nothing left to stop.
type noSubscription struct{}

func (noSubscription) Unsubscribe() {}

// subscribeIn subscribes o (whose scope is sc) to src. Foreign observables are
// guarded so they cannot break the grammar, and a subscription they return is
// tied to sc so that cancelling the scope reaches them.
func subscribeIn[T any](src Observable[T], o Observer[T], sc *scope) {
	if _, ok := src.(native); !ok {
		o = newGuard(o, sc)
	}
	sub := src.Subscribe(o)
	if sub == nil {
		return
	}
	if s, ok := sub.(*scope); ok && s == sc {
		return
	}
	if _, ok := sub.(noSubscription); ok {
		return
	}
	sc.onCancel(sub.Unsubscribe)
}

// subscribeInner is subscribeIn for an inner stream an operator counts as
// live: a panic out of its Subscribe (its observer's, say) ends it, since
// it will deliver nothing more, so sc is cancelled and torn uncounts it
// before the panic goes on.
func subscribeInner[T any](src Observable[T], o Observer[T], sc *scope, torn func()) {
	ok := false
	defer func() {
		if !ok {
			sc.cancel()
			torn()
		}
	}()
	subscribeIn(src, o, sc)
	ok = true
}

// guard protects the rest of a chain from a foreign source: it serialises
// calls and drops anything after a terminal notification or cancellation.
type guard[T any] struct {
	serial[T]
}

func newGuard[T any](down Observer[T], sc *scope) Observer[T] {
	g := &guard[T]{}
	g.init(down, sc)
	return g
}

// subscribe subscribes o to src for operators that share their downstream's
// scope, which may be nil for a chain nobody can cancel.
func subscribe[T any](src Observable[T], o Observer[T], sc *scope) Subscription {
	if sc != nil {
		subscribeIn(src, o, sc)
		return sc
	}
	if _, ok := src.(native); !ok {
		o = newGuard(o, nil)
	}
	return src.Subscribe(o)
}
