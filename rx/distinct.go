package rx

// Distinct forwards each value the first time it is seen. It remembers every
// distinct value for the life of the subscription, so its memory grows with
// the number of distinct values (not with the number of values): use it on
// streams whose keys are bounded, or DistinctUntilChanged otherwise.
func Distinct[T comparable](src Observable[T]) Observable[T] {
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := scopeOf(down)
		return subscribe[T](src, &distinctSetObserver[T]{down: down, seen: make(map[T]struct{}), sc: sc}, sc)
	})
}

type distinctSetObserver[T comparable] struct {
	down Observer[T]
	seen map[T]struct{}
	sc   *scope
}

func (d *distinctSetObserver[T]) OnNext(v T) {
	if _, ok := d.seen[v]; ok {
		return
	}
	d.seen[v] = struct{}{}
	d.down.OnNext(v)
}
func (d *distinctSetObserver[T]) OnError(err error) { d.seen = nil; d.down.OnError(err) }
func (d *distinctSetObserver[T]) OnCompleted()      { d.seen = nil; d.down.OnCompleted() }
func (d *distinctSetObserver[T]) rxScope() *scope   { return d.sc }
