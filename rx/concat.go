package rx

import "sync/atomic"

// Concat subscribes to each source in turn, the next when the previous has
// completed. Synchronous sources do not grow the stack.
func Concat[T any](srcs ...Observable[T]) Observable[T] {
	if i := nilAt(srcs); i >= 0 {
		return nilSource[T]("Concat", indexArg("srcs", i))
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		c := &concatSink[T]{down: direct(down), sc: sc, srcs: srcs}
		c.next()
		return sc
	})
}

// concatSink runs srcs one after the other: Concat's, and with resume set
// OnErrorResumeNext's (an error, or a nil source, moves on to the next).
type concatSink[T any] struct {
	down   Observer[T]
	sc     *scope
	srcs   []Observable[T]
	resume bool
	i      int
	wip    atomic.Int32
}

func (c *concatSink[T]) next() {
	if c.wip.Add(1) != 1 {
		return
	}
	for {
		if c.sc.cancelled() {
			return
		}
		if c.i == len(c.srcs) {
			c.down.OnCompleted()
			return
		}
		src := c.srcs[c.i]
		c.i++
		in := &concatInner[T]{c: c}
		c.sc.initChild(&in.sc)
		if src == nil && c.resume {
			in.OnCompleted()
		} else {
			subscribeIn[T](src, in, &in.sc)
		}
		if c.wip.Add(-1) == 0 {
			return
		}
	}
}

type concatInner[T any] struct {
	c  *concatSink[T]
	sc scope
}

func (i *concatInner[T]) OnNext(v T) { i.c.down.OnNext(v) }
func (i *concatInner[T]) OnError(err error) {
	i.sc.cancel()
	if i.c.resume {
		i.c.next()
		return
	}
	i.c.down.OnError(err)
}
func (i *concatInner[T]) OnCompleted() {
	i.sc.cancel()
	i.c.next()
}
func (i *concatInner[T]) rxScope() *scope { return &i.sc }

// ConcatMap maps each value to an observable and concatenates them: the inner
// for a value is subscribed when the previous inner has completed; values
// arriving meanwhile wait in order, at most QueueLimit of them. A producer
// on another goroutine that finds QueueLimit values waiting waits for room
// (until the subscription ends, which drops its value and returns), so an
// outer stream faster than its inners is slowed to their pace and loses
// nothing. A value that must not wait fails the stream with an
// *OverflowError instead: one that arrives on a
// goroutine running this stage (from inside an inner's delivery or the
// selector, re-entrantly: waiting there would wait for itself), or from a
// source emitting inside Subscribe (a synchronous outer longer than
// QueueLimit whose inners do not complete at once). A producer that also
// drives the inners to completion (a test pushing into a hot source, then
// advancing the inners' virtual clock) must not push more than QueueLimit
// values in between: it would wait for itself (one that has delivered a
// value of a live inner on its goroutine fails the stream instead). ConcatAll and
// SelectManyLimit queue alike.
func ConcatMap[T, U any](src Observable[T], f func(T) Observable[U]) Observable[U] {
	mustArg(f == nil, "ConcatMap", "function f")
	if src == nil {
		return nilSource[U]("ConcatMap", "src")
	}
	return flattenLimited(src, "ConcatMap", f, 1, nil)
}
