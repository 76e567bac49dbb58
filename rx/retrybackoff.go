package rx

import (
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// RetryBackoff subscribes to src again when it fails, waiting on clk between
// attempts: initial, then twice as long each time, never more than max. It
// makes attempts subscriptions in all (attempts < 1 counts as 1) and then
// fails with the last attempt's error. Values of every attempt are
// forwarded. initial <= 0 retries at once. Unsubscribing during a wait
// cancels the retry; nothing is delivered after Unsubscribe has returned.
func RetryBackoff[T any](src Observable[T], attempts int, initial, max time.Duration, clk clock.Clock) Observable[T] {
	mustArg(clk == nil, "RetryBackoff", "clock")
	if src == nil {
		return nilSource[T]("RetryBackoff", "src")
	}
	if attempts < 1 {
		attempts = 1
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		b := &backoff[T]{down: direct(down), sc: sc, src: src, left: attempts, wait: min(initial, max), max: max, clk: clk}
		b.retry = func() {
			if sc.cancelled() {
				return
			}
			b.resubscribe()
		}
		sc.onCancel(b.timer.close)
		b.resubscribe()
		return sc
	})
}

type backoff[T any] struct {
	down  Observer[T]
	sc    *scope
	src   Observable[T]
	left  int
	wait  time.Duration // before the next attempt
	max   time.Duration
	clk   clock.Clock
	timer timerSlot
	retry func()
	wip   atomic.Int32
}

// resubscribe starts the next attempt; retries of synchronous failures with
// no wait loop here rather than growing the stack.
func (b *backoff[T]) resubscribe() {
	if b.wip.Add(1) != 1 {
		return
	}
	for {
		if b.sc.cancelled() {
			return
		}
		a := &backoffAttempt[T]{b: b, sc: b.sc.child()}
		subscribeIn[T](b.src, a, a.sc)
		if b.wip.Add(-1) == 0 {
			return
		}
	}
}

func (b *backoff[T]) failed(err error) {
	b.left--
	if b.left <= 0 {
		b.down.OnError(err)
		return
	}
	wait := b.wait
	if b.wait > b.max/2 {
		b.wait = b.max
	} else {
		b.wait *= 2
	}
	if wait <= 0 {
		b.resubscribe()
		return
	}
	b.timer.arm(b.clk, wait, b.retry)
}

type backoffAttempt[T any] struct {
	b  *backoff[T]
	sc *scope
}

func (a *backoffAttempt[T]) OnNext(v T) {
	if !a.sc.cancelled() {
		a.b.down.OnNext(v)
	}
}

func (a *backoffAttempt[T]) OnError(err error) {
	if a.sc.cancelled() {
		return
	}
	a.sc.cancel()
	a.b.failed(err)
}

func (a *backoffAttempt[T]) OnCompleted() {
	if a.sc.cancelled() {
		return
	}
	a.sc.cancel()
	a.b.down.OnCompleted()
}

func (a *backoffAttempt[T]) rxScope() *scope { return a.sc }
