package rx

import (
	"time"

	"github.com/benbjohnson/clock"
)

// Interval emits 0, 1, 2, … one every period on clk, the first one period
// after subscription, and never completes. Ticks are scheduled from the
// subscription (tick k is due at (k+1)·period), so they do not drift; the
// next tick is armed after a value has been delivered, so a slow observer
// delays ticks rather than queueing them. Nothing is delivered after
// Unsubscribe has returned. period <= 0 fails with an *ArgumentError.
func Interval(period time.Duration, clk clock.Clock) Observable[int] {
	mustArg(clk == nil, "Interval", "clock")
	if period <= 0 {
		return fail[int](&ArgumentError{Op: "Interval", Arg: "period", Value: period, Reason: "must be positive"})
	}
	return observableFunc[int](func(down Observer[int]) Subscription {
		sc := ensureScope(down)
		iv := &interval{down: direct(down), sc: sc, clk: clk, period: period, sw: newStopwatch(clk)}
		iv.fire = iv.tick
		sc.onCancel(iv.timer.close)
		iv.timer.arm(clk, period, iv.fire)
		return sc
	})
}

type interval struct {
	down   Observer[int]
	sc     *scope
	clk    clock.Clock
	period time.Duration
	sw     stopwatch
	timer  timerSlot
	fire   func()
	n      int // ticks delivered; one callback runs at a time
}

func (iv *interval) tick() {
	if iv.sc.cancelled() {
		return
	}
	due := time.Duration(iv.n+1) * iv.period
	if rest := due - iv.sw.elapsed(); rest > 0 { // a clock that fired early
		iv.timer.arm(iv.clk, rest, iv.fire)
		return
	}
	n := iv.n
	iv.n++
	if iv.sc.cancelled() { // the clock read above is the clock's code
		return
	}
	iv.down.OnNext(n)
	if iv.sc.cancelled() {
		return
	}
	iv.timer.arm(iv.clk, max(time.Duration(iv.n+1)*iv.period-iv.sw.elapsed(), 0), iv.fire)
}
