package rx

// Average emits the mean of src's values as a float64 once it completes, as
// Rx.NET's Average over an integer type returns a double (RxJS has none).
// An empty src fails with a *SequenceError wrapping ErrEmpty, as Rx.NET's
// (InvalidOperationException). The sum is kept in a float64, so it is exact
// while the integer total stays below 2^53; a NaN value makes the mean NaN.
func Average[T Number](src Observable[T]) Observable[float64] {
	if src == nil {
		return nilSource[float64]("Average", "src")
	}
	return observableFunc[float64](func(down Observer[float64]) Subscription {
		a := &averageObserver[T]{}
		return startVerdict[T, float64](&a.verdict, down, src, a)
	})
}

type averageObserver[T Number] struct {
	verdict[float64]
	sum float64
	n   int
}

func (a *averageObserver[T]) OnNext(v T)        { a.sum += float64(v); a.n++ }
func (a *averageObserver[T]) OnError(err error) { a.fail(err) }
func (a *averageObserver[T]) OnCompleted() {
	if a.n == 0 {
		a.fail(&SequenceError{Op: "Average", Err: ErrEmpty})
		return
	}
	a.answer(a.sum / float64(a.n))
}
func (a *averageObserver[T]) rxScope() *scope { return &a.up }
