package rx

// DistinctBy forwards each value whose key (as key returns it) has not been
// seen before (Rx.NET's Distinct(keySelector), RxJS's distinct(keySelector)).
// Like Distinct it remembers every distinct key for the life of the
// subscription, so its memory grows with the number of distinct keys, not
// with the number of values: key streams whose keys are bounded. A key not
// equal to itself (NaN) is treated as Distinct treats such a value: the first
// passes, the others are dropped.
func DistinctBy[T any, K comparable](src Observable[T], key func(T) K) Observable[T] {
	mustArg(key == nil, "DistinctBy", "function key")
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down) // see Map
		return subscribe[T](src, &distinctByObserver[T, K]{down: down, key: key, seen: make(map[K]struct{}), sc: sc}, sc)
	})
}

type distinctByObserver[T any, K comparable] struct {
	down    Observer[T]
	key     func(T) K
	seen    map[K]struct{}
	seenNaN bool
	sc      *scope
}

func (d *distinctByObserver[T, K]) OnNext(v T) {
	k := d.key(v)
	if d.sc.cancelled() || d.seen == nil {
		return
	}
	if k != k { //nolint:gocritic // true only for NaN and keys holding one
		if d.seenNaN {
			return
		}
		d.seenNaN = true
	} else {
		if _, ok := d.seen[k]; ok {
			return
		}
		d.seen[k] = struct{}{}
	}
	d.down.OnNext(v)
}
func (d *distinctByObserver[T, K]) OnError(err error) { d.seen = nil; d.down.OnError(err) }
func (d *distinctByObserver[T, K]) OnCompleted()      { d.seen = nil; d.down.OnCompleted() }
func (d *distinctByObserver[T, K]) rxScope() *scope   { return d.sc }
