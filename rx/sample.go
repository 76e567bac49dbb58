package rx

import (
	"time"

	"github.com/benbjohnson/clock"
)

// Sample emits, at the end of each period d (counted from subscription, so
// the periods do not drift), the latest value src emitted in that period,
// and nothing for a period without a value. It holds one value.
//
// It follows Rx.NET's Sample(TimeSpan), not RxJS's sampleTime, at the end:
// when src completes, the value not yet sampled is emitted at the end of the
// current period, followed there by the completion (RxJS completes at once
// and drops it). An error is passed on at once. Values and ticks are
// serialised through one stage (one OnNext hands over its own value plus at
// most 64 others'). d <= 0 fails with an
// *ArgumentError. Nothing is delivered after Unsubscribe has returned.
func Sample[T any](src Observable[T], d time.Duration, clk clock.Clock) Observable[T] {
	mustArg(clk == nil, "Sample", "clock")
	if src == nil {
		return nilSource[T]("Sample", "src")
	}
	if d <= 0 {
		return fail[T](&ArgumentError{Op: "Sample", Arg: "d", Value: d, Reason: "must be positive"})
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		s := &sampler[T]{down: direct(down), sc: sc}
		sc.initChild(&s.up)
		s.src = &s.up
		s.startClock(s, clk, d, sc)
		s.timer.arm(clk, d, s.tick)
		subscribeIn[T](src, s, &s.up)
		return sc
	})
}

type sampler[T any] struct {
	clocked[T]
	down Observer[T]
	sc   *scope
	up   scope

	// read and written by the mailbox handler only
	v     T
	has   bool
	atEnd bool
	done  bool
}

func (s *sampler[T]) handle(e timed[T]) {
	if s.done || s.sc.cancelled() {
		return
	}
	if e.tick {
		if !s.periodEnded(!s.atEnd) {
			return
		}
		if s.has && !s.sc.cancelled() { // the clock's code ran, and arm may have waited for Unsubscribe's close
			v := s.v
			var zero T
			s.v, s.has = zero, false
			s.down.OnNext(v)
		}
		if s.atEnd && !s.sc.cancelled() {
			s.finish()
			s.down.OnCompleted()
		}
		return
	}
	switch e.kind {
	case kindNext:
		s.v, s.has = e.v, true
	case kindError:
		s.finish()
		if s.sc.cancelled() { // finish cancelled the source: its cleanups ran
			return
		}
		s.down.OnError(e.err)
	default:
		s.atEnd = true
		s.up.cancel()
	}
}

func (s *sampler[T]) finish() {
	s.done = true
	var zero T
	s.v = zero
	s.stopClock()
	s.up.cancel()
}
