package rx

import "sync"

// ExhaustMap maps a value of src to an observable and mirrors it; values of
// src that arrive while that inner is still running are dropped (RxJS's
// exhaustMap: the first request wins until it is done). It completes when
// src and the running inner have completed; any error ends the stream and
// unsubscribes everything.
func ExhaustMap[T, U any](src Observable[T], f func(T) Observable[U]) Observable[U] {
	mustArg(f == nil, "ExhaustMap", "function f")
	if src == nil {
		return nilSource[U]("ExhaustMap", "src")
	}
	return observableFunc[U](func(down Observer[U]) Subscription {
		sc := ensureScope(down)
		e := &exhauster[T, U]{work: sc.child(), f: f}
		e.out.initStage(down, sc, e.work)
		outer := e.work.child()
		subscribeIn[T](src, &exhaustOuter[T, U]{e: e, sc: outer}, outer)
		return sc
	})
}

type exhauster[T, U any] struct {
	out  serial[U]
	work *scope
	f    func(T) Observable[U]

	mu        sync.Mutex
	active    bool
	outerDone bool
}

func (e *exhauster[T, U]) fail(err error) {
	defer e.work.cancel() // also when the observer panics
	e.out.OnError(err)
}

func (e *exhauster[T, U]) complete() {
	defer e.work.cancel() // also when the observer panics
	e.out.OnCompleted()
}

type exhaustOuter[T, U any] struct {
	e  *exhauster[T, U]
	sc *scope
}

func (o *exhaustOuter[T, U]) OnNext(v T) {
	e := o.e
	e.mu.Lock()
	if e.active {
		e.mu.Unlock()
		return
	}
	e.active = true
	e.mu.Unlock()
	returned := false
	defer func() {
		if !returned { // f panicked: no inner runs for its value
			e.mu.Lock()
			e.active = false
			e.mu.Unlock()
		}
	}()
	inner := e.f(v)
	returned = true
	if inner == nil {
		e.fail(errNilInner)
		return
	}
	in := e.work.child()
	subscribeInner[U](inner, &exhaustInner[T, U]{e: e, sc: in}, in, func() {
		e.mu.Lock()
		e.active = false
		e.mu.Unlock()
	})
}

func (o *exhaustOuter[T, U]) OnError(err error) { o.e.fail(err) }

func (o *exhaustOuter[T, U]) OnCompleted() {
	o.sc.cancel()
	e := o.e
	e.mu.Lock()
	e.outerDone = true
	done := !e.active
	e.mu.Unlock()
	if done {
		e.complete()
	}
}

func (o *exhaustOuter[T, U]) rxScope() *scope { return o.sc }

type exhaustInner[T, U any] struct {
	e  *exhauster[T, U]
	sc *scope
}

func (i *exhaustInner[T, U]) OnNext(v U)        { i.e.out.OnNext(v) }
func (i *exhaustInner[T, U]) OnError(err error) { i.e.fail(err) }

func (i *exhaustInner[T, U]) OnCompleted() {
	i.sc.cancel()
	e := i.e
	e.mu.Lock()
	e.active = false
	done := e.outerDone
	e.mu.Unlock()
	if done {
		e.complete()
	}
}

func (i *exhaustInner[T, U]) rxScope() *scope { return i.sc }
