package rx

// TakeWhile forwards values while keep returns true; at the first value for
// which it returns false it unsubscribes src and completes, so TakeWhile
// over an endless synchronous source terminates. That value is dropped.
func TakeWhile[T any](src Observable[T], keep func(T) bool) Observable[T] {
	mustArg(keep == nil, "TakeWhile", "function keep")
	if src == nil {
		return nilSource[T]("TakeWhile", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		t := &takeWhileObserver[T]{down: direct(down), keep: keep, sc: sc, up: sc.child()}
		subscribeIn[T](src, t, t.up)
		return sc
	})
}

type takeWhileObserver[T any] struct {
	down Observer[T]
	keep func(T) bool
	done bool
	sc   *scope // downstream's
	up   *scope
}

func (t *takeWhileObserver[T]) OnNext(v T) {
	if t.done {
		return
	}
	keep := t.keep(v)
	if t.sc.cancelled() { // keep unsubscribed: neither the value nor the end
		t.done = true
		return
	}
	if keep {
		t.down.OnNext(v)
		return
	}
	t.end()
}

// end unsubscribes the source and completes, at the first value not kept.
func (t *takeWhileObserver[T]) end() {
	t.done = true
	t.up.cancel()
	if !t.sc.cancelled() {
		t.down.OnCompleted()
	}
}

func (t *takeWhileObserver[T]) OnError(err error) {
	if !t.done {
		t.done = true
		t.up.cancel()
		t.down.OnError(err)
	}
}

func (t *takeWhileObserver[T]) OnCompleted() {
	if !t.done {
		t.done = true
		t.up.cancel()
		t.down.OnCompleted()
	}
}

func (t *takeWhileObserver[T]) rxScope() *scope { return t.up }
