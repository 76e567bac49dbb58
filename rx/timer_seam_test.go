package rx_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// lateStops is a virtual clock whose timers cannot be stopped: stop reports
// the callback as already in flight and the callback still runs when its
// time comes — what a real timer firing while Unsubscribe runs looks like,
// made deterministic. Through it a test sees whether a timer-driven operator
// delivers after Unsubscribe has returned.
type lateStops struct{ *rxtest.Clock }

func (c lateStops) Schedule(d time.Duration, f func()) (stop func() bool) {
	c.Clock.Schedule(d, f)
	return func() bool { return false }
}

func TestTheLateStopsSeamRunsACallbackAfterItsStop(t *testing.T) {
	// The seam's own negative control: a stopped timer's callback still
	// runs, so an operator that relies on stop alone would deliver late.
	clk := lateStops{rxtest.NewClock()}
	ran := false
	stop := clk.Schedule(time.Second, func() { ran = true })
	assert.False(t, stop())
	clk.Advance(time.Second)
	assert.True(t, ran)
}

// racingClock keeps every scheduled callback until fire runs them, each on a
// goroutine of its own, so a timer callback and Unsubscribe race for real.
type racingClock struct {
	*rxtest.Clock
	mu sync.Mutex
	fs []func()
}

func (c *racingClock) Schedule(_ time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	c.fs = append(c.fs, f)
	c.mu.Unlock()
	return func() bool { return false }
}

func (c *racingClock) fire(wg *sync.WaitGroup) {
	c.mu.Lock()
	fs := c.fs
	c.fs = nil
	c.mu.Unlock()
	for _, f := range fs {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
}

// lateDeliveries races the timers of op's subscriptions against Unsubscribe
// tries times and counts the notifications that started after Unsubscribe
// had returned.
func lateDeliveries[T any](tries int, op func(clk *racingClock, feed *rx.Subject[int]) rx.Observable[T]) int64 {
	var late atomic.Int64
	for range tries {
		clk := &racingClock{Clock: rxtest.NewClock()}
		feed := rx.NewSubject[int]()
		var returned atomic.Bool
		check := func() {
			if returned.Load() {
				late.Add(1)
			}
		}
		sub := op(clk, feed).Subscribe(rx.NewObserver(func(T) { check() }, func(error) { check() }, check))
		feed.OnNext(1)
		clk.Advance(time.Hour) // every timer is due; none has run yet
		var wg sync.WaitGroup
		clk.fire(&wg)
		sub.Unsubscribe()
		returned.Store(true)
		wg.Wait()
	}
	return late.Load()
}

func TestTimerDrivenOperatorsDeliverNothingAfterUnsubscribeReturnedUnderARealRace(t *testing.T) {
	const tries = 300
	assert.Zero(t, lateDeliveries(tries, func(clk *racingClock, feed *rx.Subject[int]) rx.Observable[int] {
		return rx.Debounce[int](feed, time.Second, clk)
	}), "Debounce")
	assert.Zero(t, lateDeliveries(tries, func(clk *racingClock, feed *rx.Subject[int]) rx.Observable[[]int] {
		return rx.BufferTime[int](feed, time.Second, clk)
	}), "BufferTime")
	assert.Zero(t, lateDeliveries(tries, func(clk *racingClock, _ *rx.Subject[int]) rx.Observable[int] {
		return rx.Interval(time.Second, clk)
	}), "Interval")
	assert.Zero(t, lateDeliveries(tries, func(clk *racingClock, _ *rx.Subject[int]) rx.Observable[int] {
		return rx.RetryBackoff(rx.Concat(rx.Of(1), rx.Throw[int](rxtest.ErrTest)), 3, time.Second, time.Second, clk)
	}), "RetryBackoff")
}
