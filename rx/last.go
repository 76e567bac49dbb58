package rx

// Last emits the last value of src once it completes, then completes. An
// empty src fails with a *SequenceError wrapping ErrEmpty: Rx.NET's
// LastAsync (InvalidOperationException) and RxJS's last() (EmptyError)
// agree. It holds one value.
func Last[T any](src Observable[T]) Observable[T] {
	if src == nil {
		return nilSource[T]("Last", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		l := &lastObserver[T]{}
		return startVerdict[T, T](&l.verdict, down, src, l)
	})
}

type lastObserver[T any] struct {
	verdict[T]
	last T
	has  bool
}

func (l *lastObserver[T]) OnNext(v T) { l.last, l.has = v, true }
func (l *lastObserver[T]) OnError(err error) {
	var zero T
	l.last = zero
	l.fail(err)
}
func (l *lastObserver[T]) OnCompleted() {
	if !l.has {
		l.fail(&SequenceError{Op: "Last", Err: ErrEmpty})
		return
	}
	l.answer(l.last)
}
func (l *lastObserver[T]) rxScope() *scope { return &l.up }
