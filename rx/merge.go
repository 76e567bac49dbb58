package rx

import (
	"errors"
	"sync/atomic"
)

var errNilInner = errors.New("rx: selector returned a nil Observable")

// SelectMany maps each value to an observable and merges their values as they
// arrive (no ordering between inners; unbounded concurrency, as in Rx.NET:
// it holds no value, but runs as many inners as outer values are live, so
// use SelectManyLimit to bound them). It completes when the source and every
// inner have completed; any error ends the stream and unsubscribes
// everything.
func SelectMany[T, U any](src Observable[T], f func(T) Observable[U]) Observable[U] {
	mustArg(f == nil, "SelectMany", "function f")
	if src == nil {
		return nilSource[U]("SelectMany", "src")
	}
	return observableFunc[U](func(down Observer[U]) Subscription {
		sc := ensureScope(down)
		// The merger and the outer's observer are one allocation.
		s := &selectMany[T, U]{}
		m, outer := &s.m, &s.outer
		sc.initChild(&m.work)
		m.out.initStage(down, sc, &m.work)
		m.active.Store(1)
		outer.m, outer.f = m, f
		m.work.initChild(&outer.sc)
		subscribeIn[T](src, outer, &outer.sc)
		return sc
	})
}

// Merge merges the values of srcs as they arrive; it completes when all have.
func Merge[T any](srcs ...Observable[T]) Observable[T] {
	if i := nilAt(srcs); i >= 0 {
		return nilSource[T]("Merge", indexArg("srcs", i))
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		if len(srcs) == 0 {
			down.OnCompleted()
			return noSubscription{}
		}
		sc := ensureScope(down)
		m := &merger[T]{}
		sc.initChild(&m.work)
		m.out.initStage(down, sc, &m.work)
		m.active.Store(int64(len(srcs)))
		for _, src := range srcs {
			if m.work.cancelled() {
				break
			}
			m.subscribe(src)
		}
		return sc
	})
}

// merger is the shared state of a merge: one serialised output, and a count
// of live sources (the outer counts as one).
type merger[T any] struct {
	out    serial[T]
	work   scope
	active atomic.Int64
}

func (m *merger[T]) subscribe(src Observable[T]) {
	in := &mergeInner[T]{m: m}
	m.work.initChild(&in.sc)
	// A source torn by a panic sends no completion: a SelectMany's outer
	// is still counted (it is delivering), and a Merge whose Subscribe
	// panicked is over.
	subscribeInner[T](src, in, &in.sc, func() { m.active.Add(-1) })
}

func (m *merger[T]) doneOne() {
	if m.active.Add(-1) == 0 {
		defer m.work.cancel() // also when the observer panics
		m.out.OnCompleted()
	}
}

func (m *merger[T]) fail(err error) {
	defer m.work.cancel() // also when the observer panics
	m.out.OnError(err)
}

type mergeInner[T any] struct {
	m  *merger[T]
	sc scope
}

func (i *mergeInner[T]) OnNext(v T)        { i.m.out.OnNext(v) }
func (i *mergeInner[T]) OnError(err error) { i.m.fail(err) }
func (i *mergeInner[T]) OnCompleted() {
	i.sc.cancel()
	i.m.doneOne()
}
func (i *mergeInner[T]) rxScope() *scope { return &i.sc }

// selectMany is the state of one SelectMany subscription.
type selectMany[T, U any] struct {
	m     merger[U]
	outer selectManyOuter[T, U]
}

type selectManyOuter[T, U any] struct {
	m  *merger[U]
	f  func(T) Observable[U]
	sc scope
}

func (o *selectManyOuter[T, U]) OnNext(v T) {
	inner := o.f(v)
	if inner == nil {
		o.m.fail(errNilInner)
		return
	}
	o.m.active.Add(1)
	o.m.subscribe(inner)
}
func (o *selectManyOuter[T, U]) OnError(err error) { o.m.fail(err) }
func (o *selectManyOuter[T, U]) OnCompleted() {
	o.sc.cancel()
	o.m.doneOne()
}
func (o *selectManyOuter[T, U]) rxScope() *scope { return &o.sc }
