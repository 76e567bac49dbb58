package rx

// IsEmpty emits false at src's first value (src is then unsubscribed) and
// true if src completes without one. Rx.NET's IsEmpty and RxJS's isEmpty()
// agree.
func IsEmpty[T any](src Observable[T]) Observable[bool] {
	if src == nil {
		return nilSource[bool]("IsEmpty", "src")
	}
	return observableFunc[bool](func(down Observer[bool]) Subscription {
		e := &isEmptyObserver[T]{}
		return startVerdict[T, bool](&e.verdict, down, src, e)
	})
}

type isEmptyObserver[T any] struct{ verdict[bool] }

func (e *isEmptyObserver[T]) OnNext(T)          { e.answer(false) }
func (e *isEmptyObserver[T]) OnError(err error) { e.fail(err) }
func (e *isEmptyObserver[T]) OnCompleted()      { e.answer(true) }
func (e *isEmptyObserver[T]) rxScope() *scope   { return &e.up }
