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
	done bool              // the last window has ended
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
	ws.w = newPinnedSubject[T](ws.pin, ws.op)
	if !ws.sc.cancelled() {
		ws.down.OnNext(ws.w)
	}
}

// next completes the open window and opens the next one.
func (ws *windows[T]) next() {
	ws.w.s.OnCompleted()
	if !ws.up.cancelled() {
		ws.open()
	}
}

// end ends the open window and then the outer stream as n does (an error
// or a completion), and releases the sources.
func (ws *windows[T]) end(n note[T]) {
	ws.done = true
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
	ws.up.cancel()
}
