package rx

import (
	"time"

	"github.com/benbjohnson/clock"
)

// WindowTime splits src into consecutive windows of d, counted from
// subscription (so they do not drift), each emitted as an Observable when
// it opens: the first at subscription, the next when the previous
// completes at the end of its d. When src completes or fails, the open
// window and then the outer stream do too. Rx.NET's Window(timeSpan) and
// RxJS's windowTime(d) agree on the windows. As in Rx.NET (its
// RefCountDisposable), src stays subscribed while the outer subscription
// or a subscription to an open window is live; the timer runs as long as
// src is subscribed. d <= 0 fails with an *ArgumentError.
//
// A window holds no values: it is a hot stream, and a value reaches the
// observers subscribed to it at that moment, so subscribe inside OnNext of
// the window to see all of it. Values and ticks are serialised through one
// stage (one OnNext delivers its own value plus at most 64 others').
func WindowTime[T any](src Observable[T], d time.Duration, clk clock.Clock) Observable[Observable[T]] {
	mustArg(clk == nil, "WindowTime", "clock")
	if src == nil {
		return nilSource[Observable[T]]("WindowTime", "src")
	}
	if d <= 0 {
		return fail[Observable[T]](&ArgumentError{Op: "WindowTime", Arg: "d", Value: d, Reason: "must be positive"})
	}
	return observableFunc[Observable[T]](func(down Observer[Observable[T]]) Subscription {
		w := &windowTimer[T]{}
		sc := w.start(down, "WindowTime")
		w.src = w.up
		w.startClock(w, clk, d, w.up)
		w.open()
		w.timer.arm(clk, d, w.tick)
		if !w.up.cancelled() {
			subscribeIn[T](src, w, w.up)
		}
		return sc
	})
}

type windowTimer[T any] struct {
	windows[T] // handled by the mailbox (and start and open, before the source is subscribed)
	clocked[T]
}

func (w *windowTimer[T]) handle(e timed[T]) {
	switch {
	case w.done || w.up.cancelled():
	case e.tick:
		if w.periodEnded(true) {
			w.next()
		}
	case e.kind == kindNext:
		w.deliver(e.v)
	default:
		w.stopClock()
		w.end(e.note)
	}
}
