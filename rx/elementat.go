package rx

// ElementAt emits the value at index (counting from 0) and completes,
// unsubscribing src at once, as Rx.NET's ElementAt does. A src that
// completes with index values or fewer fails with an *IndexError (Rx.NET:
// ArgumentOutOfRangeException; RxJS: ArgumentOutOfRangeError). A negative
// index fails with an *ArgumentError at subscription, before src is
// subscribed (Rx.NET throws at the call; this package never panics on a
// value).
func ElementAt[T any](src Observable[T], index int) Observable[T] {
	if src == nil {
		return nilSource[T]("ElementAt", "src")
	}
	if index < 0 {
		return fail[T](&ArgumentError{Op: "ElementAt", Arg: "index", Value: index, Reason: "must not be negative"})
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		e := &elementAtObserver[T]{index: index}
		return startVerdict[T, T](&e.verdict, down, src, e)
	})
}

type elementAtObserver[T any] struct {
	verdict[T]
	index, seen int
}

func (e *elementAtObserver[T]) OnNext(v T) {
	if e.done {
		return
	}
	if e.seen == e.index {
		e.answer(v)
		return
	}
	e.seen++
}
func (e *elementAtObserver[T]) OnError(err error) { e.fail(err) }
func (e *elementAtObserver[T]) OnCompleted() {
	e.fail(&IndexError{Op: "ElementAt", Index: e.index, Count: e.seen})
}
func (e *elementAtObserver[T]) rxScope() *scope { return &e.up }
