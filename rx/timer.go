package rx

import (
	"time"

	"github.com/benbjohnson/clock"
)

// Timer emits the clock's time once due has passed, then completes.
func Timer(due time.Duration, clk clock.Clock) Observable[time.Time] {
	mustArg(clk == nil, "Timer", "clock")
	return observableFunc[time.Time](func(o Observer[time.Time]) Subscription {
		sc := ensureScope(o)
		d := direct(o)
		stop := after(clk, due, func() {
			if sc.cancelled() {
				return
			}
			now := clk.Now()
			if sc.cancelled() {
				return
			}
			d.OnNext(now)
			if !sc.cancelled() {
				o.OnCompleted()
			}
		})
		sc.onCancel(func() { stop() })
		return sc
	})
}
