package rx

import "sync/atomic"

// Repeat subscribes to src count times in all, the next time when the
// previous run has completed, and completes after the last; an error ends it
// at once. count <= 0 completes without subscribing, as RxJS's repeat(count)
// does (Rx.NET's Repeat(0) completes too, and throws for a negative count;
// this package never panics on a value). Repeat has no endless form: pass
// math.MaxInt. Repeating a synchronous source does not grow the stack, and
// an unsubscription stops it between two runs.
func Repeat[T any](src Observable[T], count int) Observable[T] {
	if src == nil {
		return nilSource[T]("Repeat", "src")
	}
	if count <= 0 {
		return Empty[T]()
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		r := &repeater[T]{down: direct(down), sc: sc, src: src, left: count}
		r.resubscribe()
		return sc
	})
}

type repeater[T any] struct {
	down Observer[T]
	sc   *scope
	src  Observable[T]
	left int
	wip  atomic.Int32
}

func (r *repeater[T]) resubscribe() {
	if r.wip.Add(1) != 1 {
		return
	}
	for {
		if r.sc.cancelled() {
			return
		}
		r.left--
		a := &repeatRun[T]{r: r}
		r.sc.initChild(&a.sc)
		subscribeIn[T](r.src, a, &a.sc)
		if r.wip.Add(-1) == 0 {
			return
		}
	}
}

type repeatRun[T any] struct {
	r  *repeater[T]
	sc scope
}

func (a *repeatRun[T]) OnNext(v T) { a.r.down.OnNext(v) }

func (a *repeatRun[T]) OnError(err error) {
	a.sc.cancel()
	a.r.down.OnError(err)
}

func (a *repeatRun[T]) OnCompleted() {
	a.sc.cancel()
	if a.r.left <= 0 {
		a.r.down.OnCompleted()
		return
	}
	a.r.resubscribe()
}

func (a *repeatRun[T]) rxScope() *scope { return &a.sc }
