package rx

// Skip drops the first n values and forwards the rest. n <= 0 forwards all.
func Skip[T any](src Observable[T], n int) Observable[T] {
	if src == nil {
		return nilSource[T]("Skip", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := scopeOf(down)
		return subscribe[T](src, &skipObserver[T]{down: direct(down), left: n, sc: sc}, sc)
	})
}

type skipObserver[T any] struct {
	down Observer[T]
	left int
	sc   *scope
}

func (s *skipObserver[T]) OnNext(v T) {
	if s.left > 0 {
		s.left--
		return
	}
	s.down.OnNext(v)
}
func (s *skipObserver[T]) OnError(err error) { s.down.OnError(err) }
func (s *skipObserver[T]) OnCompleted()      { s.down.OnCompleted() }
func (s *skipObserver[T]) rxScope() *scope   { return s.sc }
