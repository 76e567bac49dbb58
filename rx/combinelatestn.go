package rx

// CombineLatest emits the latest values of all srcs, in their order, whenever
// one of them emits, once each has emitted (Rx.NET's CombineLatest over a
// list, which emits an IList; RxJS's combineLatest([...])). Each slice is the
// receiver's to keep. It completes when all have completed, or as soon as
// one completes without ever having emitted (no combination can form), and
// fails with the first error. With no sources it completes at once. It
// holds one value per source; values are serialised as in Merge (one OnNext
// at this stage delivers its own value plus at most 64 others').
func CombineLatest[T any](srcs ...Observable[T]) Observable[[]T] {
	if i := nilAt(srcs); i >= 0 {
		return nilSource[[]T]("CombineLatest", indexArg("srcs", i))
	}
	return observableFunc[[]T](func(down Observer[[]T]) Subscription {
		if len(srcs) == 0 {
			down.OnCompleted()
			return noSubscription{}
		}
		sc := ensureScope(down)
		c := &combineN[T]{down: direct(down), latest: make([]T, len(srcs)), has: make([]bool, len(srcs))}
		c.sc = sc
		c.start(srcs, c)
		return sc
	})
}

type combineN[T any] struct {
	nary[T]
	down Observer[[]T]

	// owned by the mailbox handler
	latest      []T
	has         []bool
	nHas, nDone int
	finished    bool
}

func (c *combineN[T]) handle(e naryNote[T]) {
	if c.finished || c.sc.cancelled() {
		return
	}
	switch e.kind {
	case kindNext:
		if !c.has[e.i] {
			c.has[e.i] = true
			c.nHas++
		}
		c.latest[e.i] = e.v
		if c.nHas == len(c.latest) {
			c.down.OnNext(append([]T(nil), c.latest...))
		}
	case kindError:
		c.finish()
		c.down.OnError(e.err)
	default:
		c.nDone++
		if c.nDone == len(c.latest) || !c.has[e.i] {
			c.finish()
			c.down.OnCompleted()
		}
	}
}

func (c *combineN[T]) finish() {
	c.finished = true
	c.latest = nil
	c.end()
}
