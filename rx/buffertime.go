package rx

import (
	"time"

	"github.com/benbjohnson/clock"
)

// BufferTime emits the values of src in consecutive windows of d, starting at
// subscription: at the end of each window the values that arrived in it, in
// order — an empty slice for a window without values. When src completes,
// the current window is emitted at once (possibly empty), then the
// completion; an error drops it. Each slice is the receiver's to keep.
// d <= 0 fails with an *ArgumentError.
//
// Windows are measured from the subscription, not from the previous tick,
// so they do not drift. A window holds the values that arrive in it: bound
// the rate or the window if that can be large. Nothing is delivered after
// Unsubscribe has returned.
func BufferTime[T any](src Observable[T], d time.Duration, clk clock.Clock) Observable[[]T] {
	mustArg(clk == nil, "BufferTime", "clock")
	if src == nil {
		return nilSource[[]T]("BufferTime", "src")
	}
	if d <= 0 {
		return fail[[]T](&ArgumentError{Op: "BufferTime", Arg: "d", Value: d, Reason: "must be positive"})
	}
	return observableFunc[[]T](func(down Observer[[]T]) Subscription {
		sc := ensureScope(down)
		s := &bufferTimeSink[T]{down: direct(down), sc: sc, up: sc.child()}
		s.src = s.up
		s.startClock(s, clk, d, sc)
		s.timer.arm(clk, d, s.tick)
		subscribeIn[T](src, s, s.up)
		return sc
	})
}

type bufferTimeSink[T any] struct {
	clocked[T]
	down Observer[[]T]
	sc   *scope
	up   *scope

	// read and written by the mailbox handler only
	buf  []T
	done bool
}

func (s *bufferTimeSink[T]) handle(e timed[T]) {
	if s.done || s.sc.cancelled() {
		return
	}
	if e.tick {
		if !s.periodEnded(true) {
			return
		}
		if s.sc.cancelled() { // the clock's code ran, and arm may have waited for Unsubscribe's close
			return
		}
		s.down.OnNext(s.take())
		return
	}
	switch e.kind {
	case kindNext:
		s.buf = append(s.buf, e.v)
	case kindError:
		s.finish()
		s.buf = nil
		if s.sc.cancelled() { // finish cancelled the source: its cleanups ran
			return
		}
		s.down.OnError(e.err)
	default:
		s.finish()
		if s.sc.cancelled() { // finish cancelled the source: its cleanups ran
			return
		}
		s.down.OnNext(s.take())
		if !s.sc.cancelled() {
			s.down.OnCompleted()
		}
	}
}

// take returns the window's values, a non-nil empty slice if there were none.
func (s *bufferTimeSink[T]) take() []T {
	b := s.buf
	s.buf = nil
	if b == nil {
		b = []T{}
	}
	return b
}

func (s *bufferTimeSink[T]) finish() {
	s.done = true
	s.stopClock()
	s.up.cancel()
}
