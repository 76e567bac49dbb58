package rx

// Find emits the first value for which match returns true and completes,
// unsubscribing src at once. When no value matches it completes without a
// value: RxJS's find() emits undefined then, which Go has no room for, so
// this follows Rx.NET's Where(match).Take(1); add ThrowIfEmpty or
// DefaultIfEmpty for the other readings. match is not called after the
// match, nor once the subscriber has unsubscribed.
func Find[T any](src Observable[T], match func(T) bool) Observable[T] {
	mustArg(match == nil, "Find", "function match")
	if src == nil {
		return nilSource[T]("Find", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		f := &findObserver[T]{match: match}
		return startVerdict[T, T](&f.verdict, down, src, f)
	})
}

type findObserver[T any] struct {
	verdict[T]
	match func(T) bool
}

func (f *findObserver[T]) OnNext(v T) {
	if f.over() {
		return
	}
	if f.match(v) && !f.sc.cancelled() {
		f.answer(v)
	}
}
func (f *findObserver[T]) OnError(err error) { f.fail(err) }
func (f *findObserver[T]) OnCompleted()      { f.complete() }
func (f *findObserver[T]) rxScope() *scope   { return &f.up }
