package rx

// Reduce folds the values with f, starting from seed, and emits the result
// once src completes (seed itself for an empty src). An error is passed on
// and nothing is emitted.
func Reduce[T, A any](src Observable[T], seed A, f func(A, T) A) Observable[A] {
	mustArg(f == nil, "Reduce", "function f")
	if src == nil {
		return nilSource[A]("Reduce", "src")
	}
	return observableFunc[A](func(down Observer[A]) Subscription {
		sc := ensureScope(down) // it checks for an unsubscription between the notifications it makes at the end
		return subscribe[T](src, &reduceObserver[T, A]{down: direct(down), acc: seed, f: f, sc: sc}, sc)
	})
}

type reduceObserver[T, A any] struct {
	down Observer[A]
	acc  A
	f    func(A, T) A
	sc   *scope
}

func (r *reduceObserver[T, A]) OnNext(v T)        { r.acc = r.f(r.acc, v) }
func (r *reduceObserver[T, A]) OnError(err error) { r.down.OnError(err) }
func (r *reduceObserver[T, A]) OnCompleted() {
	r.down.OnNext(r.acc)
	if !r.sc.cancelled() {
		r.down.OnCompleted()
	}
}
func (r *reduceObserver[T, A]) rxScope() *scope { return r.sc }
