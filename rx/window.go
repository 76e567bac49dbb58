package rx

// Window splits src into consecutive windows separated by the values of
// boundaries, each emitted as an Observable when it opens: the first at
// subscription, the next whenever boundaries emits (the open window then
// completes). src is subscribed before boundaries, so a synchronous src
// fills the first window. When either completes or fails, the open window
// and then the outer stream do too.
//
// Rx.NET's Window(windowBoundaries) is followed throughout (its vectors are
// the tests'). RxJS's window(windowBoundaries) differs in two ways: it
// subscribes boundaries first, and its boundaries' completion ends
// nothing. As in Rx.NET (its RefCountDisposable), src and boundaries stay
// subscribed while the outer subscription or a subscription to an open
// window is live.
//
// A window holds no values: it is a hot stream, and a value reaches the
// observers subscribed to it at that moment, so subscribe inside OnNext of
// the window to see all of it. Values and boundaries are serialised
// through one stage (one OnNext delivers its own value plus at most 64
// others').
func Window[T, B any](src Observable[T], boundaries Observable[B]) Observable[Observable[T]] {
	if src == nil {
		return nilSource[Observable[T]]("Window", "src")
	}
	if boundaries == nil {
		return nilSource[Observable[T]]("Window", "boundaries")
	}
	return observableFunc[Observable[T]](func(down Observer[Observable[T]]) Subscription {
		w := &windowBounded[T, B]{}
		sc := w.start(down, "Window")
		w.mb.h, w.src = w, w.up
		w.bounds.w = w
		w.up.initChild(&w.bounds.sc)
		w.open()
		if !w.up.cancelled() {
			subscribeIn[T](src, w, w.up)
		}
		if !w.bounds.sc.cancelled() {
			subscribeIn[B](boundaries, &w.bounds, &w.bounds.sc)
		}
		return sc
	})
}

type windowBounded[T, B any] struct {
	windows[T] // handled by the mailbox (and start and open, before the sources are subscribed)
	timedIn[T]
	bounds windowBoundary[T, B]
}

// handle runs one notification; a tick is a boundary.
func (w *windowBounded[T, B]) handle(e timed[T]) {
	switch {
	case w.done || w.up.cancelled():
	case e.tick:
		w.next()
	case e.kind == kindNext:
		w.deliver(e.v)
	default:
		w.mb.close()
		w.end(e.note)
	}
}

// windowBoundary observes boundaries: each value closes the open window,
// and its end is the stream's.
type windowBoundary[T, B any] struct {
	w  *windowBounded[T, B]
	sc scope
}

func (b *windowBoundary[T, B]) OnNext(B) { b.w.mb.post(timed[T]{tick: true}, &b.sc) }
func (b *windowBoundary[T, B]) OnError(err error) {
	b.w.mb.postEnd(timed[T]{note: note[T]{kind: kindError, err: err}})
}
func (b *windowBoundary[T, B]) OnCompleted() {
	b.w.mb.postEnd(timed[T]{note: note[T]{kind: kindCompleted}})
}
func (b *windowBoundary[T, B]) rxScope() *scope { return &b.sc }
