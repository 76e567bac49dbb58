package rx

import "sync/atomic"

// OnErrorResumeNext subscribes to each source in turn, the next when the
// previous has ended, whether it completed or failed; errors are dropped,
// and the stream completes after the last source (Rx.NET's
// OnErrorResumeNext(params sources), RxJS's onErrorResumeNext). Synchronous
// sources do not grow the stack. A nil source is skipped, as a failing one.
func OnErrorResumeNext[T any](srcs ...Observable[T]) Observable[T] {
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		c := &resumeSink[T]{down: down, sc: sc, srcs: srcs}
		c.next()
		return sc
	})
}

type resumeSink[T any] struct {
	down Observer[T]
	sc   *scope
	srcs []Observable[T]
	i    int
	wip  atomic.Int32
}

func (c *resumeSink[T]) next() {
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
		in := &resumeInner[T]{c: c}
		c.sc.initChild(&in.sc)
		if src == nil {
			in.OnCompleted()
		} else {
			subscribeIn[T](src, in, &in.sc)
		}
		if c.wip.Add(-1) == 0 {
			return
		}
	}
}

type resumeInner[T any] struct {
	c  *resumeSink[T]
	sc scope
}

func (i *resumeInner[T]) OnNext(v T)      { i.c.down.OnNext(v) }
func (i *resumeInner[T]) OnError(error)   { i.sc.cancel(); i.c.next() }
func (i *resumeInner[T]) OnCompleted()    { i.sc.cancel(); i.c.next() }
func (i *resumeInner[T]) rxScope() *scope { return &i.sc }
