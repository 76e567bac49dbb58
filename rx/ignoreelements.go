package rx

// IgnoreElements drops every value and forwards only src's error or
// completion (Rx.NET's IgnoreElements, RxJS's ignoreElements()).
func IgnoreElements[T any](src Observable[T]) Observable[T] {
	if src == nil {
		return nilSource[T]("IgnoreElements", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := scopeOf(down)
		return subscribe[T](src, &ignoreObserver[T]{down: direct(down), sc: sc}, sc)
	})
}

type ignoreObserver[T any] struct {
	down Observer[T]
	sc   *scope
}

func (i *ignoreObserver[T]) OnNext(T)          {}
func (i *ignoreObserver[T]) OnError(err error) { i.down.OnError(err) }
func (i *ignoreObserver[T]) OnCompleted()      { i.down.OnCompleted() }
func (i *ignoreObserver[T]) rxScope() *scope   { return i.sc }
