package rx

// checkedDistinctUntilChanged is DistinctUntilChanged over a T that may
// hold a dynamic type == cannot compare (an interface): each value is
// compared with the one before it by equalChecked, and a pair on which ==
// would panic (both hold the same uncomparable dynamic type) fails the
// stream with an *UncomparableError and unsubscribes src; a value of
// another type is simply unequal, as for ==. It does not fuse, so the fused
// loops (stLoopEq) compare only types the compiler has checked.
func checkedDistinctUntilChanged[T comparable](src Observable[T]) Observable[T] {
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		d := &checkedDistinctObserver[T]{down: direct(down), sc: sc, up: sc.child()}
		subscribeIn[T](src, d, d.up)
		return sc
	})
}

type checkedDistinctObserver[T comparable] struct {
	down Observer[T]
	last T
	seen bool
	done bool
	sc   *scope // downstream's
	up   *scope // the source's
}

func (d *checkedDistinctObserver[T]) OnNext(v T) {
	if d.done {
		return
	}
	if d.seen {
		eq, err := equalChecked("DistinctUntilChanged", "value", "the value before it", v, d.last)
		if err != nil {
			d.OnError(err)
			return
		}
		if eq {
			return
		}
	}
	d.seen, d.last = true, v
	d.down.OnNext(v)
}

func (d *checkedDistinctObserver[T]) OnError(err error) {
	if !d.done {
		d.done = true
		d.up.cancel()
		var zero T
		d.last = zero
		d.down.OnError(err)
	}
}

func (d *checkedDistinctObserver[T]) OnCompleted() {
	if !d.done {
		d.done = true
		d.up.cancel()
		d.down.OnCompleted()
	}
}

func (d *checkedDistinctObserver[T]) rxScope() *scope { return d.up }
