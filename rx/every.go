package rx

// Every emits false as soon as ok returns false for a value (src is then
// unsubscribed and ok not called again) and true if src completes first, an
// empty src included. Rx.NET's All and RxJS's every() agree, short-circuit
// included.
func Every[T any](src Observable[T], ok func(T) bool) Observable[bool] {
	mustArg(ok == nil, "Every", "function ok")
	if src == nil {
		return nilSource[bool]("Every", "src")
	}
	return observableFunc[bool](func(down Observer[bool]) Subscription {
		e := &everyObserver[T]{ok: ok}
		return startVerdict[T, bool](&e.verdict, down, src, e)
	})
}

type everyObserver[T any] struct {
	verdict[bool]
	ok func(T) bool
}

func (e *everyObserver[T]) OnNext(v T) {
	if e.over() {
		return
	}
	if !e.ok(v) && !e.sc.cancelled() {
		e.answer(false)
	}
}
func (e *everyObserver[T]) OnError(err error) { e.fail(err) }
func (e *everyObserver[T]) OnCompleted()      { e.answer(true) }
func (e *everyObserver[T]) rxScope() *scope   { return &e.up }
