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
	if d <= 0 {
		return fail[[]T](&ArgumentError{Op: "BufferTime", Arg: "d", Value: d, Reason: "must be positive"})
	}
	return observableFunc[[]T](func(down Observer[[]T]) Subscription {
		sc := ensureScope(down)
		s := &bufferTimeSink[T]{down: direct(down), sc: sc, up: sc.child(), clk: clk, d: d, sw: newStopwatch(clk)}
		s.mb.h = s
		s.tick = func() {
			if sc.cancelled() {
				return
			}
			s.mb.postEnd(timed[T]{tick: true})
		}
		sc.onCancel(s.timer.close)
		s.timer.arm(clk, d, s.tick)
		subscribeIn[T](src, s, s.up)
		return sc
	})
}

type bufferTimeSink[T any] struct {
	down  Observer[[]T]
	sc    *scope
	up    *scope
	clk   clock.Clock
	d     time.Duration
	sw    stopwatch
	mb    mailbox[timed[T]]
	timer timerSlot
	tick  func()

	// read and written by the mailbox handler only
	buf    []T
	window int64 // windows emitted
	done   bool
}

func (s *bufferTimeSink[T]) handle(e timed[T]) {
	if s.done || s.sc.cancelled() {
		return
	}
	if e.tick {
		end := time.Duration(s.window+1) * s.d
		if rest := end - s.sw.elapsed(); rest > 0 { // a clock that fired early
			s.timer.arm(s.clk, rest, s.tick)
			return
		}
		s.window++
		s.timer.arm(s.clk, time.Duration(s.window+1)*s.d-s.sw.elapsed(), s.tick)
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
	s.mb.close()
	s.timer.close()
	s.up.cancel()
}

func (s *bufferTimeSink[T]) OnNext(v T) {
	s.mb.post(timed[T]{note: note[T]{kind: kindNext, v: v}}, s.up)
}
func (s *bufferTimeSink[T]) OnError(err error) {
	s.mb.postEnd(timed[T]{note: note[T]{kind: kindError, err: err}})
}
func (s *bufferTimeSink[T]) OnCompleted()    { s.mb.postEnd(timed[T]{note: note[T]{kind: kindCompleted}}) }
func (s *bufferTimeSink[T]) rxScope() *scope { return s.up }
