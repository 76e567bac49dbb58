package rx

// OnErrorReturn forwards src, and when src fails emits v and completes
// instead (samber/ro's and RxGo's OnErrorReturn; Rx.NET writes it
// Catch(Return(v))). The error is dropped: use Catch to look at it.
func OnErrorReturn[T any](src Observable[T], v T) Observable[T] {
	if src == nil {
		return nilSource[T]("OnErrorReturn", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		o := &onErrorReturnObserver[T]{down: direct(down), sc: sc, v: v}
		sc.initChild(&o.up)
		subscribeIn[T](src, o, &o.up)
		return sc
	})
}

type onErrorReturnObserver[T any] struct {
	down Observer[T]
	sc   *scope
	v    T
	up   scope // the source's
}

func (o *onErrorReturnObserver[T]) OnNext(v T) { o.down.OnNext(v) }
func (o *onErrorReturnObserver[T]) OnCompleted() {
	o.up.cancel()
	o.down.OnCompleted()
}
func (o *onErrorReturnObserver[T]) OnError(error) {
	o.up.cancel()
	if o.sc.cancelled() {
		return
	}
	o.down.OnNext(o.v)
	if !o.sc.cancelled() {
		o.down.OnCompleted()
	}
}
func (o *onErrorReturnObserver[T]) rxScope() *scope { return &o.up }
