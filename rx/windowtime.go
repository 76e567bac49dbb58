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
	if d <= 0 {
		return fail[Observable[T]](&ArgumentError{Op: "WindowTime", Arg: "d", Value: d, Reason: "must be positive"})
	}
	return observableFunc[Observable[T]](func(down Observer[Observable[T]]) Subscription {
		sc := ensureScope(down)
		w := &windowTimer[T]{down: direct(down), sc: sc, up: newScope(), clk: clk, d: d, sw: newStopwatch(clk)}
		w.pin = newSourcePin(w.up)
		w.mb.h = w
		w.tick = func() {
			if w.up.cancelled() {
				return
			}
			w.mb.postEnd(timed[T]{tick: true})
		}
		w.up.onCancel(w.timer.close)
		sc.onCancel(w.pin.release)
		w.open()
		w.timer.arm(clk, d, w.tick)
		if !w.up.cancelled() {
			subscribeIn[T](src, w, w.up)
		}
		return sc
	})
}

type windowTimer[T any] struct {
	down  Observer[Observable[T]]
	sc    *scope
	up    *scope
	pin   *sourcePin
	clk   clock.Clock
	d     time.Duration
	sw    stopwatch
	mb    mailbox[timed[T]]
	timer timerSlot
	tick  func()

	// read and written by the mailbox handler (and open, before the source
	// is subscribed) only
	w      *pinnedSubject[T]
	window int64 // windows ended
	done   bool
}

func (w *windowTimer[T]) open() {
	w.w = newPinnedSubject[T](w.pin, "WindowTime")
	if !w.sc.cancelled() {
		w.down.OnNext(w.w)
	}
}

func (w *windowTimer[T]) handle(e timed[T]) {
	if w.done || w.up.cancelled() {
		return
	}
	if e.tick {
		end := time.Duration(w.window+1) * w.d
		if rest := end - w.sw.elapsed(); rest > 0 { // a clock that fired early
			w.timer.arm(w.clk, rest, w.tick)
			return
		}
		w.window++
		w.timer.arm(w.clk, time.Duration(w.window+1)*w.d-w.sw.elapsed(), w.tick)
		w.w.s.OnCompleted()
		if !w.up.cancelled() {
			w.open()
		}
		return
	}
	switch e.kind {
	case kindNext:
		w.w.s.OnNext(e.v)
	case kindError:
		w.finish()
		w.w.s.OnError(e.err)
		if !w.sc.cancelled() {
			w.down.OnError(e.err)
		}
		w.up.cancel()
	default:
		w.finish()
		w.w.s.OnCompleted()
		if !w.sc.cancelled() {
			w.down.OnCompleted()
		}
		w.up.cancel()
	}
}

func (w *windowTimer[T]) finish() {
	w.done = true
	w.mb.close()
	w.timer.close()
}

func (w *windowTimer[T]) OnNext(v T) {
	w.mb.post(timed[T]{note: note[T]{kind: kindNext, v: v}}, w.up)
}
func (w *windowTimer[T]) OnError(err error) {
	w.mb.postEnd(timed[T]{note: note[T]{kind: kindError, err: err}})
}
func (w *windowTimer[T]) OnCompleted()    { w.mb.postEnd(timed[T]{note: note[T]{kind: kindCompleted}}) }
func (w *windowTimer[T]) rxScope() *scope { return w.up }
