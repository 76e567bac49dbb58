package rx

// ThrowIfEmpty forwards src, and fails with the error errf returns if src
// completes without a value (RxJS's throwIfEmpty(errorFactory); Rx.NET
// writes it SwitchIfEmpty(Throw(err))). errf runs only then, once; a nil
// error from it fails the stream with ErrNilError, as OnError(nil) does.
func ThrowIfEmpty[T any](src Observable[T], errf func() error) Observable[T] {
	mustArg(errf == nil, "ThrowIfEmpty", "function errf")
	if src == nil {
		return nilSource[T]("ThrowIfEmpty", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down) // it checks for an unsubscription made by errf
		return subscribe[T](src, &throwIfEmptyObserver[T]{down: direct(down), errf: errf, sc: sc}, sc)
	})
}

type throwIfEmptyObserver[T any] struct {
	down Observer[T]
	errf func() error
	seen bool
	sc   *scope
}

func (t *throwIfEmptyObserver[T]) OnNext(v T) {
	t.seen = true
	t.down.OnNext(v)
}
func (t *throwIfEmptyObserver[T]) OnError(err error) { t.down.OnError(err) }
func (t *throwIfEmptyObserver[T]) OnCompleted() {
	if t.seen {
		t.down.OnCompleted()
		return
	}
	err := t.errf()
	if t.sc.cancelled() {
		return
	}
	if err == nil {
		err = ErrNilError
	}
	t.down.OnError(err)
}
func (t *throwIfEmptyObserver[T]) rxScope() *scope { return t.sc }
