package rx

// windows is what Window, WindowCount and WindowTime share: the open window
// and the outer stream that announces each. Its methods are called one at a
// time (by the source's grammar, or through the operator's mailbox).
type windows[T any] struct {
	down Observer[Observable[T]]
	sc   *scope // the outer stream's
	up   *scope // the sources' (and a timer's): pinned while a window is observed
	pin  *sourcePin
	op   string
	w    *pinnedSubject[T] // the open window
	// unannounced says w has not been announced yet: a panic out of an
	// observer (the previous window's completion) skipped that, and the
	// next value or end announces it first.
	unannounced bool
	done        bool // the last window has ended
}

// start readies ws for down and returns the outer stream's scope. src stays
// subscribed while the outer subscription or a subscription to an open
// window is live (Rx.NET's RefCountDisposable).
func (ws *windows[T]) start(down Observer[Observable[T]], op string) *scope {
	ws.sc = ensureScope(down)
	ws.down, ws.up, ws.op = direct(down), newScope(), op
	ws.pin = newSourcePin(ws.up)
	ws.sc.onCancel(ws.pin.release)
	return ws.sc
}

// open opens a window and announces it.
func (ws *windows[T]) open() {
	ws.w, ws.unannounced = newPinnedSubject[T](ws.pin, ws.op), true
	ws.announce()
}

// announce announces the open window, if it has not been.
func (ws *windows[T]) announce() {
	if ws.unannounced {
		ws.unannounced = false
		if !ws.sc.cancelled() {
			ws.down.OnNext(ws.w)
		}
	}
}

// deliver passes v to the open window, announced first.
func (ws *windows[T]) deliver(v T) {
	ws.announce()
	ws.w.s.OnNext(v)
}

// next completes the open window and opens the next one. The next is
// made before the open one completes, so that a panic out of that
// completion loses no value: the next value announces it first.
func (ws *windows[T]) next() {
	done := ws.w
	ws.w, ws.unannounced = newPinnedSubject[T](ws.pin, ws.op), true
	done.s.OnCompleted()
	if !ws.up.cancelled() {
		ws.announce()
	}
}

// end ends the open window and then the outer stream as n does (an error
// or a completion), and releases the sources, also when an observer's
// panic cuts that short.
func (ws *windows[T]) end(n note[T]) {
	ws.done = true
	defer ws.up.cancel()
	ws.announce()
	if n.kind == kindError {
		ws.w.s.OnError(n.err)
		if !ws.sc.cancelled() {
			ws.down.OnError(n.err)
		}
	} else {
		ws.w.s.OnCompleted()
		if !ws.sc.cancelled() {
			ws.down.OnCompleted()
		}
	}
}
