package rx

import (
	"time"

	"github.com/benbjohnson/clock"
)

// DelaySubscription subscribes to src d after it is itself subscribed, on
// clk (Rx.NET's DelaySubscription(dueTime); RxJS's delay on the
// subscription). Values a hot src emits before then are not seen. Unsubscribing
// first stops the timer, and src is never subscribed; a d <= 0 subscribes at
// once. One timer per subscription, nothing held.
func DelaySubscription[T any](src Observable[T], d time.Duration, clk clock.Clock) Observable[T] {
	mustArg(clk == nil, "DelaySubscription", "clock")
	if src == nil {
		return nilSource[T]("DelaySubscription", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		if d <= 0 {
			subscribeIn(src, inScope(down, sc), sc)
			return sc
		}
		s := &delaySubscriber[T]{src: src, down: direct(down), sc: sc}
		s.h.c = s
		s.timer.arm(clk, d, s.fire)
		sc.addHook(&s.h)
		return sc
	})
}

type delaySubscriber[T any] struct {
	src   Observable[T]
	down  Observer[T]
	sc    *scope
	timer timerSlot
	h     hook
}

func (s *delaySubscriber[T]) fire() {
	if s.sc.cancelled() {
		return
	}
	subscribeIn(s.src, inScope(s.down, s.sc), s.sc)
}

func (s *delaySubscriber[T]) rxCancel() { s.timer.close() }
