package rx

import (
	"time"

	"github.com/benbjohnson/clock"
)

// TimestampValue is a value with the time it arrived, as Timestamp emits it
// (Rx.NET's Timestamped<T>).
type TimestampValue[T any] struct {
	Value     T
	Timestamp time.Time
}

// Timestamp emits each value of src with clk's time when it arrived (Rx.NET's
// Timestamp, RxJS's timestamp()). It reads the clock once per value and arms
// no timer.
func Timestamp[T any](src Observable[T], clk clock.Clock) Observable[TimestampValue[T]] {
	mustArg(clk == nil, "Timestamp", "clock")
	if src == nil {
		return nilSource[TimestampValue[T]]("Timestamp", "src")
	}
	return observableFunc[TimestampValue[T]](func(down Observer[TimestampValue[T]]) Subscription {
		sc := ensureScope(down) // a clock is user code: see OnNext
		return subscribe[T](src, &timestampObserver[T]{down: direct(down), clk: clk, sc: sc}, sc)
	})
}

type timestampObserver[T any] struct {
	down Observer[TimestampValue[T]]
	clk  clock.Clock
	sc   *scope
}

func (t *timestampObserver[T]) OnNext(v T) {
	now := t.clk.Now()
	if t.sc.cancelled() { // unsubscribed while the clock was read
		return
	}
	t.down.OnNext(TimestampValue[T]{Value: v, Timestamp: now})
}
func (t *timestampObserver[T]) OnError(err error) { t.down.OnError(err) }
func (t *timestampObserver[T]) OnCompleted()      { t.down.OnCompleted() }
func (t *timestampObserver[T]) rxScope() *scope   { return t.sc }
