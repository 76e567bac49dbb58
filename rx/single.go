package rx

// Single emits the only value of src once it completes. A second value fails
// the stream at once with a *SequenceError wrapping ErrMoreThanOne and
// unsubscribes src; an empty src fails with one wrapping ErrEmpty. Rx.NET's
// SingleAsync and RxJS's single() agree on both. It holds one value.
func Single[T any](src Observable[T]) Observable[T] {
	if src == nil {
		return nilSource[T]("Single", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		s := &singleObserver[T]{}
		return startVerdict[T, T](&s.verdict, down, src, s)
	})
}

type singleObserver[T any] struct {
	verdict[T]
	v   T
	has bool
}

func (s *singleObserver[T]) OnNext(v T) {
	if s.has {
		var zero T
		s.v = zero
		s.fail(&SequenceError{Op: "Single", Err: ErrMoreThanOne})
		return
	}
	s.v, s.has = v, true
}
func (s *singleObserver[T]) OnError(err error) { s.fail(err) }
func (s *singleObserver[T]) OnCompleted() {
	if !s.has {
		s.fail(&SequenceError{Op: "Single", Err: ErrEmpty})
		return
	}
	s.answer(s.v)
}
func (s *singleObserver[T]) rxScope() *scope { return &s.up }
