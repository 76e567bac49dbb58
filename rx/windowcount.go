package rx

// WindowCount splits src into consecutive windows of n values, each emitted
// as an Observable when it opens: the first at subscription, the next as
// soon as the previous has received its n-th value and completed — so a src
// whose length is a multiple of n ends with an empty window. When src
// completes or fails, the open window and then the outer stream do too.
// Rx.NET's Window(count) and RxJS's windowCount(n) agree on the windows.
// As in Rx.NET (its RefCountDisposable), src stays subscribed while the
// outer subscription or a subscription to an open window is live. n < 1
// fails with an *ArgumentError.
//
// A window holds no values: it is a hot stream, and a value reaches the
// observers subscribed to it at that moment, so subscribe inside OnNext of
// the window to see all of it. Deliveries into a window are serialised as
// a Subject's (one OnNext delivers its own value plus at most 64 others').
func WindowCount[T any](src Observable[T], n int) Observable[Observable[T]] {
	if src == nil {
		return nilSource[Observable[T]]("WindowCount", "src")
	}
	if n < 1 {
		return fail[Observable[T]](&ArgumentError{Op: "WindowCount", Arg: "n", Value: n, Reason: "must be positive"})
	}
	return observableFunc[Observable[T]](func(down Observer[Observable[T]]) Subscription {
		w := &windowCounter[T]{n: n}
		sc := w.start(down, "WindowCount")
		w.open()
		if !w.up.cancelled() {
			subscribeIn[T](src, w, w.up)
		}
		return sc
	})
}

// windowCounter observes the source; its calls are serialised by the
// source's grammar.
type windowCounter[T any] struct {
	windows[T]
	n, count int // values in the open window
}

func (w *windowCounter[T]) OnNext(v T) {
	if w.done {
		return
	}
	w.closeFull() // one a panic out of the last value's delivery left open
	w.count++
	w.deliver(v)
	w.closeFull()
}

// closeFull completes the open window once it holds n values.
func (w *windowCounter[T]) closeFull() {
	if w.count == w.n && !w.up.cancelled() {
		w.count = 0
		w.next()
	}
}

func (w *windowCounter[T]) OnError(err error) {
	if !w.done {
		w.end(note[T]{kind: kindError, err: err})
	}
}

func (w *windowCounter[T]) OnCompleted() {
	if !w.done {
		w.end(note[T]{kind: kindCompleted})
	}
}

func (w *windowCounter[T]) rxScope() *scope { return w.up }
