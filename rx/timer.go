package rx

import (
	"time"

	"github.com/benbjohnson/clock"
)

// Timer emits the clock's time once due has passed, then completes.
func Timer(due time.Duration, clk clock.Clock) Observable[time.Time] {
	return observableFunc[time.Time](func(o Observer[time.Time]) Subscription {
		sc := ensureScope(o)
		g := &gate{}
		sc.onCancel(g.shut)
		stop := after(clk, due, func() {
			if !g.enter(sc) {
				return
			}
			defer g.leave()
			o.OnNext(clk.Now())
			if !sc.cancelled() {
				o.OnCompleted()
			}
		})
		sc.onCancel(func() { stop() })
		return sc
	})
}
