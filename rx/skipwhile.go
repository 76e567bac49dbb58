package rx

// SkipWhile drops values while skip returns true and forwards every value
// from the first one for which it returns false (skip is not called again).
func SkipWhile[T any](src Observable[T], skip func(T) bool) Observable[T] {
	mustArg(skip == nil, "SkipWhile", "function skip")
	if src == nil {
		return nilSource[T]("SkipWhile", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down) // see Map
		return subscribe[T](src, &skipWhileObserver[T]{down: direct(down), skip: skip, sc: sc}, sc)
	})
}

type skipWhileObserver[T any] struct {
	down    Observer[T]
	skip    func(T) bool
	passing bool
	sc      *scope
}

func (s *skipWhileObserver[T]) OnNext(v T) {
	if !s.passing {
		if s.skip(v) || s.sc.cancelled() {
			return
		}
		s.passing = true
	}
	s.down.OnNext(v)
}
func (s *skipWhileObserver[T]) OnError(err error) { s.down.OnError(err) }
func (s *skipWhileObserver[T]) OnCompleted()      { s.down.OnCompleted() }
func (s *skipWhileObserver[T]) rxScope() *scope   { return s.sc }
