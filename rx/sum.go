package rx

import "fmt"

// Number is the constraint of Sum and Average: Go's integer and
// floating-point types and the types defined on them.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64
}

// Sum emits the sum of src's values once it completes; 0 for an empty src,
// as Rx.NET's Sum (RxJS has no sum; reduce from 0 gives the same). As
// Rx.NET's, integer addition is checked: a total that no longer fits T fails
// the stream at once with an *ArithmeticOverflowError and unsubscribes src,
// rather than wrapping around. Floating-point sums follow IEEE 754 (they
// reach ±Inf, or NaN).
func Sum[T Number](src Observable[T]) Observable[T] {
	if src == nil {
		return nilSource[T]("Sum", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		s := &sumObserver[T]{}
		return startVerdict[T, T](&s.verdict, down, src, s)
	})
}

type sumObserver[T Number] struct {
	verdict[T]
	sum T
}

func (s *sumObserver[T]) OnNext(v T) {
	if s.done {
		return
	}
	n := s.sum + v
	// Integers wrap; floats never move against the addend's sign (and
	// every comparison with a NaN is false), so this catches wrapping only.
	if (v > 0 && n < s.sum) || (v < 0 && n > s.sum) {
		s.fail(&ArithmeticOverflowError{Op: "Sum", Type: fmt.Sprintf("%T", s.sum)})
		return
	}
	s.sum = n
}
func (s *sumObserver[T]) OnError(err error) { s.fail(err) }
func (s *sumObserver[T]) OnCompleted()      { s.answer(s.sum) }
func (s *sumObserver[T]) rxScope() *scope   { return &s.up }
