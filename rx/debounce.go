package rx

import (
	"time"

	"github.com/benbjohnson/clock"
)

// Debounce emits a value only once d has passed without another value after
// it (Rx.NET's Throttle, RxJS's debounceTime): of a burst, the last value
// arrives d after the burst. When src completes, the value still pending is
// emitted at once, then the completion; an error drops it. d <= 0 forwards
// every value as it comes.
//
// One timer serves the whole subscription: each value records when it came,
// and a timer that fires early re-arms for the remainder, so values cost no
// timer and no allocation. Nothing is delivered after Unsubscribe has
// returned, even by a timer callback already running.
func Debounce[T any](src Observable[T], d time.Duration, clk clock.Clock) Observable[T] {
	mustArg(clk == nil, "Debounce", "clock")
	if src == nil {
		return nilSource[T]("Debounce", "src")
	}
	if d <= 0 {
		return src
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		s := &debounceSink[T]{down: direct(down), sc: sc, up: sc.child()}
		s.src = s.up
		s.startClock(s, clk, d, sc)
		subscribeIn[T](src, s, s.up)
		return sc
	})
}

type debounceSink[T any] struct {
	clocked[T]
	down Observer[T]
	sc   *scope
	up   *scope

	// read and written by the mailbox handler only
	pending T
	has     bool
	last    time.Duration // when pending arrived, since subscription
	armed   bool
	done    bool
}

func (s *debounceSink[T]) handle(e timed[T]) {
	if s.done || s.sc.cancelled() {
		return
	}
	if e.tick {
		s.armed = false
		if !s.has {
			return
		}
		if rest := s.last + s.d - s.sw.elapsed(); rest > 0 {
			s.armed = true
			s.timer.arm(s.clk, rest, s.tick)
			return
		}
		if s.sc.cancelled() { // unsubscribed while the clock was read
			return
		}
		v := s.pending
		s.has, s.pending = false, *new(T)
		s.down.OnNext(v)
		return
	}
	switch e.kind {
	case kindNext:
		s.pending, s.has, s.last = e.v, true, s.sw.elapsed()
		if !s.armed {
			s.armed = true
			s.timer.arm(s.clk, s.d, s.tick)
		}
	case kindError:
		s.finish()
		if s.sc.cancelled() { // finish cancelled the source: its cleanups ran
			return
		}
		s.down.OnError(e.err)
	default:
		s.finish()
		if s.sc.cancelled() { // finish cancelled the source: its cleanups ran
			return
		}
		if s.has {
			v := s.pending
			s.has, s.pending = false, *new(T)
			s.down.OnNext(v)
			if s.sc.cancelled() {
				return
			}
		}
		s.down.OnCompleted()
	}
}

func (s *debounceSink[T]) finish() {
	s.done = true
	s.stopClock()
	s.up.cancel()
}
