package rx

// DefaultIfEmpty forwards src, and emits v before the completion if src
// completed without a value.
func DefaultIfEmpty[T any](src Observable[T], v T) Observable[T] {
	if src == nil {
		return nilSource[T]("DefaultIfEmpty", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down) // it checks for an unsubscription between the notifications it makes at the end
		return subscribe[T](src, &defaultObserver[T]{down: direct(down), v: v, sc: sc}, sc)
	})
}

type defaultObserver[T any] struct {
	down Observer[T]
	v    T
	seen bool
	sc   *scope
}

func (d *defaultObserver[T]) OnNext(v T) {
	d.seen = true
	d.down.OnNext(v)
}
func (d *defaultObserver[T]) OnError(err error) { d.down.OnError(err) }
func (d *defaultObserver[T]) OnCompleted() {
	if !d.seen {
		d.down.OnNext(d.v)
		if d.sc.cancelled() {
			return
		}
	}
	d.down.OnCompleted()
}
func (d *defaultObserver[T]) rxScope() *scope { return d.sc }
