package rx

import "sync/atomic"

// Finally calls f exactly once when the subscription ends: after a terminal
// notification has been forwarded, or when it is unsubscribed.
func Finally[T any](src Observable[T], f func()) Observable[T] {
	mustArg(f == nil, "Finally", "function f")
	if src == nil {
		return nilSource[T]("Finally", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		o := &finallyObserver[T]{down: direct(down), sc: sc, f: f}
		sc.onCancel(o.run)
		subscribeIn[T](src, o, sc)
		return sc
	})
}

type finallyObserver[T any] struct {
	down Observer[T]
	sc   *scope
	f    func()
	ran  atomic.Bool
}

func (o *finallyObserver[T]) run() {
	if o.ran.CompareAndSwap(false, true) {
		o.f()
	}
}

func (o *finallyObserver[T]) OnNext(v T) { o.down.OnNext(v) }
func (o *finallyObserver[T]) OnError(err error) {
	defer o.run() // also when the observer panics: the subscription has ended
	o.down.OnError(err)
}
func (o *finallyObserver[T]) OnCompleted() {
	defer o.run() // also when the observer panics
	o.down.OnCompleted()
}
func (o *finallyObserver[T]) rxScope() *scope { return o.sc }
