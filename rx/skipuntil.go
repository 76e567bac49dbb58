package rx

import "sync/atomic"

// SkipUntil drops src's values until start emits its first value, then
// forwards them (start is then unsubscribed). start is subscribed first, as
// Rx.NET and RxJS do, so a start that emits inside Subscribe lets every
// value through. A start that completes without a value lets none through;
// src's completion still ends the stream. The first error of either ends
// it.
func SkipUntil[T, S any](src Observable[T], start Observable[S]) Observable[T] {
	if src == nil {
		return nilSource[T]("SkipUntil", "src")
	}
	if start == nil {
		return nilSource[T]("SkipUntil", "start")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		u := &skipUntil[T, S]{work: sc.child()}
		u.out.initStage(down, sc, u.work)
		st := u.work.child()
		subscribeIn[S](start, &skipUntilStart[T, S]{u: u, sc: st}, st)
		if !u.out.stopped.Load() {
			subscribeIn[T](src, &skipUntilSource[T, S]{u: u}, u.work)
		}
		return sc
	})
}

type skipUntil[T, S any] struct {
	out  serial[T]
	work *scope
	open atomic.Bool
}

func (u *skipUntil[T, S]) end(err error) {
	defer u.work.cancel() // also when the observer panics
	if err != nil {
		u.out.OnError(err)
	} else {
		u.out.OnCompleted()
	}
}

type skipUntilSource[T, S any] struct{ u *skipUntil[T, S] }

func (s *skipUntilSource[T, S]) OnNext(v T) {
	if s.u.open.Load() {
		s.u.out.OnNext(v)
	}
}
func (s *skipUntilSource[T, S]) OnError(err error) { s.u.end(err) }
func (s *skipUntilSource[T, S]) OnCompleted()      { s.u.end(nil) }
func (s *skipUntilSource[T, S]) rxScope() *scope   { return s.u.work }

type skipUntilStart[T, S any] struct {
	u  *skipUntil[T, S]
	sc *scope
}

func (s *skipUntilStart[T, S]) OnNext(S) {
	s.u.open.Store(true)
	s.sc.cancel()
}
func (s *skipUntilStart[T, S]) OnError(err error) { s.u.end(err) }
func (s *skipUntilStart[T, S]) OnCompleted()      { s.sc.cancel() }
func (s *skipUntilStart[T, S]) rxScope() *scope   { return s.sc }
