package rx

// ForkJoin waits for all srcs to complete and emits their last values
// together, in their order, then completes (Rx.NET's ForkJoin over a list,
// RxJS's forkJoin([...])). Both references agree where a source completes
// without a value: the stream completes at once, with no value, and the
// other sources are unsubscribed. It fails with the first error; with no
// sources it completes at once with no value (RxJS's forkJoin([])). It
// holds one value per source; the sources' notifications are serialised
// through one stage (a producer waits for room, as in Merge).
func ForkJoin[T any](srcs ...Observable[T]) Observable[[]T] {
	if i := nilAt(srcs); i >= 0 {
		return nilSource[[]T]("ForkJoin", indexArg("srcs", i))
	}
	return observableFunc[[]T](func(down Observer[[]T]) Subscription {
		if len(srcs) == 0 {
			down.OnCompleted()
			return noSubscription{}
		}
		sc := ensureScope(down)
		f := &forkJoiner[T]{down: direct(down), last: make([]T, len(srcs)), has: make([]bool, len(srcs))}
		f.sc = sc
		f.start(srcs, f)
		return sc
	})
}

type forkJoiner[T any] struct {
	nary[T]
	down Observer[[]T]

	// owned by the mailbox handler
	last     []T
	has      []bool
	nDone    int
	finished bool
}

func (f *forkJoiner[T]) handle(e naryNote[T]) {
	if f.finished || f.sc.cancelled() {
		return
	}
	switch e.kind {
	case kindNext:
		f.last[e.i], f.has[e.i] = e.v, true
	case kindError:
		f.finish()
		f.down.OnError(e.err)
	default:
		if !f.has[e.i] {
			f.finish()
			f.down.OnCompleted()
			return
		}
		f.nDone++
		if f.nDone < len(f.last) {
			return
		}
		out := f.last
		f.finish()
		f.down.OnNext(out)
		if !f.sc.cancelled() {
			f.down.OnCompleted()
		}
	}
}

func (f *forkJoiner[T]) finish() {
	f.finished = true
	f.last = nil
	f.end()
}
