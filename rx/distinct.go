package rx

// Distinct forwards each value the first time it is seen. It remembers every
// distinct value for the life of the subscription, so its memory grows with
// the number of distinct values (not with the number of values): use it on
// streams whose keys are bounded, or DistinctUntilChanged otherwise.
//
// A value that is not equal to itself (a float NaN, or a struct holding one)
// cannot be found again in a map: Distinct emits the first such value and
// drops the others, as Rx.NET and RxJS do for NaN, and keeps none of them.
//
// A value holding a dynamic type == cannot compare (T an interface) fails
// the stream with an *UncomparableError.
func Distinct[T comparable](src Observable[T]) Observable[T] {
	if src == nil {
		return nilSource[T]("Distinct", "src")
	}
	check := mayHoldUncomparable[T]()
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := scopeOf(down)
		d := &distinctSetObserver[T]{down: direct(down), seen: make(map[T]struct{}), sc: sc}
		if check {
			// A value that cannot be compared ends the stream from here:
			// the source gets a scope of its own to unsubscribe.
			root := ensureScope(down)
			d.check, d.sc = true, root.child()
			subscribeIn[T](src, d, d.sc)
			return root
		}
		return subscribe[T](src, d, sc)
	})
}

type distinctSetObserver[T comparable] struct {
	down    Observer[T]
	seen    map[T]struct{} // nil once ended
	seenNaN bool           // a value unequal to itself was emitted
	check   bool           // T may hold values == cannot compare: see mayHoldUncomparable
	sc      *scope         // the source's (downstream's unless check)
}

func (d *distinctSetObserver[T]) OnNext(v T) {
	if d.check {
		if d.seen == nil {
			return
		}
		if err := uncomparable("Distinct", "value", v); err != nil {
			d.sc.cancel()
			d.OnError(err)
			return
		}
	}
	if v != v { //nolint:gocritic // true only for NaN and values holding one
		if d.seenNaN {
			return
		}
		d.seenNaN = true
		d.down.OnNext(v)
		return
	}
	if _, ok := d.seen[v]; ok {
		return
	}
	d.seen[v] = struct{}{}
	d.down.OnNext(v)
}
func (d *distinctSetObserver[T]) OnError(err error) { d.seen = nil; d.down.OnError(err) }
func (d *distinctSetObserver[T]) OnCompleted()      { d.seen = nil; d.down.OnCompleted() }
func (d *distinctSetObserver[T]) rxScope() *scope   { return d.sc }
