package rx

import "sync/atomic"

// Retry subscribes to src again when it fails, up to attempts subscriptions in
// all (attempts < 1 counts as 1); the error of the last attempt is passed on.
// Retrying a synchronous failure does not grow the stack.
func Retry[T any](src Observable[T], attempts int) Observable[T] {
	if src == nil {
		return nilSource[T]("Retry", "src")
	}
	if attempts < 1 {
		attempts = 1
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		r := &retrier[T]{down: direct(down), sc: sc, src: src, left: attempts}
		r.resubscribe()
		return sc
	})
}

type retrier[T any] struct {
	down Observer[T]
	sc   *scope
	src  Observable[T]
	left int
	wip  atomic.Int32
}

func (r *retrier[T]) resubscribe() {
	if r.wip.Add(1) != 1 {
		return
	}
	for {
		if r.sc.cancelled() {
			return
		}
		a := &retryAttempt[T]{r: r, sc: r.sc.child()}
		subscribeIn[T](r.src, a, a.sc)
		if r.wip.Add(-1) == 0 {
			return
		}
	}
}

type retryAttempt[T any] struct {
	r  *retrier[T]
	sc *scope
}

func (a *retryAttempt[T]) OnNext(v T) {
	if !a.sc.cancelled() {
		a.r.down.OnNext(v)
	}
}

func (a *retryAttempt[T]) OnError(err error) {
	if a.sc.cancelled() {
		return
	}
	a.sc.cancel()
	a.r.left--
	if a.r.left <= 0 {
		a.r.down.OnError(err)
		return
	}
	a.r.resubscribe()
}

func (a *retryAttempt[T]) OnCompleted() {
	if a.sc.cancelled() {
		return
	}
	a.sc.cancel()
	a.r.down.OnCompleted()
}

func (a *retryAttempt[T]) rxScope() *scope { return a.sc }
