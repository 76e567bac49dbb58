package rx

// Zip emits the n-th values of all srcs together, in their order, once each
// has emitted its n-th value (Rx.NET's Zip over a list; RxJS's
// zip([...])). Each slice is the receiver's to keep. It completes once a
// source has completed and every value it emitted has been zipped, and
// fails with the first error. With no sources it completes at once.
//
// Values of the sources that are ahead wait for their partners, at most
// ZipLimit per source (beyond that the stream fails with an
// *OverflowError), as in Zip2: a source that emits synchronously inside
// Subscribe is read in full before the next is subscribed, so zip such
// sources only when they are shorter than that. The sources' values are
// serialised through one stage: one OnNext delivers its own row plus at
// most 64 others'.
func Zip[T any](srcs ...Observable[T]) Observable[[]T] {
	if i := nilAt(srcs); i >= 0 {
		return nilSource[[]T]("Zip", indexArg("srcs", i))
	}
	return observableFunc[[]T](func(down Observer[[]T]) Subscription {
		if len(srcs) == 0 {
			down.OnCompleted()
			return noSubscription{}
		}
		sc := ensureScope(down)
		z := &zipN[T]{down: direct(down), qs: make([]queue[T], len(srcs)), done: make([]bool, len(srcs))}
		z.sc = sc
		z.start(srcs, z)
		return sc
	})
}

type zipN[T any] struct {
	nary[T]
	down Observer[[]T]

	// owned by the mailbox handler
	qs       []queue[T]
	done     []bool
	finished bool
}

func (z *zipN[T]) handle(e naryNote[T]) {
	if z.finished || z.sc.cancelled() {
		return
	}
	switch e.kind {
	case kindError:
		z.finish()
		z.down.OnError(e.err)
		return
	case kindCompleted:
		z.done[e.i] = true
	default:
		z.qs[e.i].push(e.v)
		for z.ready() {
			row := make([]T, len(z.qs))
			for i := range z.qs {
				row[i] = z.qs[i].pop()
			}
			z.down.OnNext(row)
			if z.sc.cancelled() {
				return
			}
		}
		if z.qs[e.i].len() > ZipLimit {
			z.finish()
			z.down.OnError(&OverflowError{Op: "Zip", Limit: ZipLimit})
			return
		}
	}
	for i := range z.qs {
		if z.done[i] && z.qs[i].len() == 0 {
			z.finish()
			z.down.OnCompleted()
			return
		}
	}
}

func (z *zipN[T]) ready() bool {
	for i := range z.qs {
		if z.qs[i].len() == 0 {
			return false
		}
	}
	return true
}

func (z *zipN[T]) finish() {
	z.finished = true
	z.qs = nil
	z.end()
}
