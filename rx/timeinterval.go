package rx

import (
	"time"

	"github.com/benbjohnson/clock"
)

// IntervalValue is a value with the time since the one before it, as
// TimeInterval emits it (Rx.NET's TimeInterval<T>).
type IntervalValue[T any] struct {
	Value    T
	Interval time.Duration
}

// TimeInterval emits each value of src with the time on clk since the value
// before it, or since the subscription for the first value (Rx.NET's
// TimeInterval, RxJS's timeInterval()). It reads the clock once per value
// (on the real clock, its monotonic part only) and arms no timer.
func TimeInterval[T any](src Observable[T], clk clock.Clock) Observable[IntervalValue[T]] {
	mustArg(clk == nil, "TimeInterval", "clock")
	if src == nil {
		return nilSource[IntervalValue[T]]("TimeInterval", "src")
	}
	return observableFunc[IntervalValue[T]](func(down Observer[IntervalValue[T]]) Subscription {
		sc := ensureScope(down) // a clock is user code: see OnNext
		return subscribe[T](src, &timeIntervalObserver[T]{down: direct(down), sw: newStopwatch(clk), sc: sc}, sc)
	})
}

type timeIntervalObserver[T any] struct {
	down Observer[IntervalValue[T]]
	sw   stopwatch
	last time.Duration
	sc   *scope
}

func (t *timeIntervalObserver[T]) OnNext(v T) {
	now := t.sw.elapsed()
	d := now - t.last
	t.last = now
	if t.sc.cancelled() { // unsubscribed while the clock was read
		return
	}
	t.down.OnNext(IntervalValue[T]{Value: v, Interval: d})
}
func (t *timeIntervalObserver[T]) OnError(err error) { t.down.OnError(err) }
func (t *timeIntervalObserver[T]) OnCompleted()      { t.down.OnCompleted() }
func (t *timeIntervalObserver[T]) rxScope() *scope   { return t.sc }
