package rx

import (
	"time"

	"github.com/benbjohnson/clock"
)

// Throttle emits a value, then drops the values that follow it for d (the
// leading edge, RxJS's throttleTime): the first value after the window has
// passed is emitted at once and opens the next window. It arms no timer: each
// value reads the clock once. d <= 0 forwards every value.
func Throttle[T any](src Observable[T], d time.Duration, clk clock.Clock) Observable[T] {
	mustArg(clk == nil, "Throttle", "clock")
	if src == nil {
		return nilSource[T]("Throttle", "src")
	}
	if d <= 0 {
		return src
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down) // a clock is user code: see OnNext
		t := &throttleObserver[T]{down: direct(down), d: d, sw: newStopwatch(clk), sc: sc}
		return subscribe[T](src, t, sc)
	})
}

type throttleObserver[T any] struct {
	down    Observer[T]
	d       time.Duration
	sw      stopwatch
	last    time.Duration
	emitted bool
	sc      *scope
}

func (t *throttleObserver[T]) OnNext(v T) {
	now := t.sw.elapsed()
	if t.emitted && now-t.last < t.d {
		return
	}
	t.emitted, t.last = true, now
	if t.sc.cancelled() { // unsubscribed while the clock was read
		return
	}
	t.down.OnNext(v)
}
func (t *throttleObserver[T]) OnError(err error) { t.down.OnError(err) }
func (t *throttleObserver[T]) OnCompleted()      { t.down.OnCompleted() }
func (t *throttleObserver[T]) rxScope() *scope   { return t.sc }
