package rx

// Distinct forwards each value the first time it is seen. It remembers every
// distinct value for the life of the subscription, so its memory grows with
// the number of distinct values (not with the number of values): use it on
// streams whose keys are bounded, or DistinctUntilChanged otherwise.
//
// A value that is not equal to itself (a float NaN, or a struct holding one)
// cannot be found again in a map: Distinct emits the first such value and
// drops the others, as Rx.NET and RxJS do for NaN, and keeps none of them.
func Distinct[T comparable](src Observable[T]) Observable[T] {
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := scopeOf(down)
		return subscribe[T](src, &distinctSetObserver[T]{down: down, seen: make(map[T]struct{}), sc: sc}, sc)
	})
}

type distinctSetObserver[T comparable] struct {
	down    Observer[T]
	seen    map[T]struct{}
	seenNaN bool // a value unequal to itself was emitted
	sc      *scope
}

func (d *distinctSetObserver[T]) OnNext(v T) {
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
