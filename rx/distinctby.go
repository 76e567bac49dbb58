package rx

// DistinctBy forwards each value whose key (as key returns it) has not been
// seen before (Rx.NET's Distinct(keySelector), RxJS's distinct(keySelector)).
// Like Distinct it remembers every distinct key for the life of the
// subscription, so its memory grows with the number of distinct keys, not
// with the number of values: key streams whose keys are bounded. A key not
// equal to itself (NaN) is treated as Distinct treats such a value: the first
// passes, the others are dropped.
//
// A key holding a dynamic type == cannot compare (K an interface) fails the
// stream with an *UncomparableError.
func DistinctBy[T any, K comparable](src Observable[T], key func(T) K) Observable[T] {
	mustArg(key == nil, "DistinctBy", "function key")
	if src == nil {
		return nilSource[T]("DistinctBy", "src")
	}
	check := mayHoldUncomparable[K]()
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down) // see Map
		d := &distinctByObserver[T, K]{down: direct(down), key: key, seen: make(map[K]struct{}), up: sc}
		if check {
			// A key that cannot be compared ends the stream from here:
			// the source gets a scope of its own to unsubscribe.
			d.check, d.up = true, sc.child()
		}
		subscribeIn[T](src, d, d.up)
		return sc
	})
}

type distinctByObserver[T any, K comparable] struct {
	down    Observer[T]
	key     func(T) K
	seen    map[K]struct{} // nil once ended
	seenNaN bool
	check   bool   // K may hold keys == cannot compare: see mayHoldUncomparable
	up      *scope // the source's: downstream's unless check
}

func (d *distinctByObserver[T, K]) OnNext(v T) {
	k := d.key(v)
	if d.up.cancelled() || d.seen == nil {
		return
	}
	if d.check {
		if err := uncomparable("DistinctBy", "key", k); err != nil {
			d.up.cancel()
			d.OnError(err)
			return
		}
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
func (d *distinctByObserver[T, K]) rxScope() *scope   { return d.up }
