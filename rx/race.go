package rx

import "sync/atomic"

// Race mirrors the first of srcs to send any notification — a value, an
// error or the completion — and unsubscribes the others (Rx.NET's Amb,
// RxJS's race; they agree). Sources are subscribed in order, and one that
// notifies inside Subscribe wins before the next is subscribed. With no
// sources it never notifies (both references). It holds nothing: the
// winner's notifications pass straight through, on its goroutine.
func Race[T any](srcs ...Observable[T]) Observable[T] {
	if i := nilAt(srcs); i >= 0 {
		return nilSource[T]("Race", indexArg("srcs", i))
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		r := &racer[T]{down: direct(down), sc: sc, ins: make([]raceIn[T], len(srcs))}
		for i := range r.ins {
			r.ins[i].r, r.ins[i].i = r, int32(i)+1
			sc.initChild(&r.ins[i].sc)
		}
		for i, src := range srcs {
			if sc.cancelled() || r.winner.Load() != 0 {
				break
			}
			subscribeIn[T](src, &r.ins[i], &r.ins[i].sc)
		}
		return sc
	})
}

type racer[T any] struct {
	down   Observer[T]
	sc     *scope
	ins    []raceIn[T]
	winner atomic.Int32 // index+1 of the winner, 0 while none
}

// wins reports whether i is (now) the winner; the first to ask wins, and
// the others are unsubscribed.
func (r *racer[T]) wins(i int32) bool {
	if w := r.winner.Load(); w != 0 {
		return w == i
	}
	if !r.winner.CompareAndSwap(0, i) {
		return r.winner.Load() == i
	}
	for j := range r.ins {
		if r.ins[j].i != i {
			r.ins[j].sc.cancel()
		}
	}
	return true
}

type raceIn[T any] struct {
	r  *racer[T]
	i  int32
	sc scope
}

func (in *raceIn[T]) OnNext(v T) {
	if in.r.wins(in.i) && !in.sc.cancelled() {
		in.r.down.OnNext(v)
	}
}
func (in *raceIn[T]) OnError(err error) {
	if in.r.wins(in.i) && !in.sc.cancelled() {
		in.sc.cancel()
		in.r.down.OnError(err)
	}
}
func (in *raceIn[T]) OnCompleted() {
	if in.r.wins(in.i) && !in.sc.cancelled() {
		in.sc.cancel()
		in.r.down.OnCompleted()
	}
}
func (in *raceIn[T]) rxScope() *scope { return &in.sc }
