package rx

// SkipLast forwards every value of src except the last n: each value is
// held until n more have arrived, and the n held at completion are dropped
// (Rx.NET's SkipLast(count), RxJS's skipLast()). It holds at most n values,
// in a ring grown only as values arrive. n <= 0 forwards every value.
func SkipLast[T any](src Observable[T], n int) Observable[T] {
	if src == nil {
		return nilSource[T]("SkipLast", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := scopeOf(down)
		return subscribe[T](src, &skipLastObserver[T]{down: direct(down), n: n, sc: sc}, sc)
	})
}

type skipLastObserver[T any] struct {
	down Observer[T]
	n    int
	ring []T
	head int // index of the oldest value once the ring is full
	sc   *scope
}

func (s *skipLastObserver[T]) OnNext(v T) {
	if s.n <= 0 {
		s.down.OnNext(v)
		return
	}
	if len(s.ring) < s.n {
		s.ring = append(s.ring, v)
		return
	}
	out := s.ring[s.head]
	s.ring[s.head] = v
	s.head = (s.head + 1) % s.n
	s.down.OnNext(out)
}
func (s *skipLastObserver[T]) OnError(err error) { s.ring = nil; s.down.OnError(err) }
func (s *skipLastObserver[T]) OnCompleted()      { s.ring = nil; s.down.OnCompleted() }
func (s *skipLastObserver[T]) rxScope() *scope   { return s.sc }
