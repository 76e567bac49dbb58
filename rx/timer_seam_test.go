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

func (c *racingClock) fire(wg *sync.WaitGroup) []func() {
	c.mu.Lock()
	fs := c.fs
	c.fs = nil
	c.mu.Unlock()
	run(wg, fs)
	return fs
}

// run runs each of fs on a goroutine of its own.
func run(wg *sync.WaitGroup, fs []func()) {
	for _, f := range fs {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
}

// lateDeliveries races the timers of op's subscriptions against Unsubscribe
// tries times. It returns the notifications that began after Unsubscribe
// had returned while a timer callback that was already running delivered
// them (inFlight), and those made by timer callbacks that began after
// Unsubscribe had returned: the same callbacks run again, as timers whose
// stop came too late, and those they had armed (after).
//
// Only after can be required to be zero. An operator checks the
// subscription immediately before it delivers, and once Unsubscribe has
// marked it nothing passes that check; but a callback preempted between
// its check and the observer's first instruction can let a whole
// Unsubscribe run on another goroutine in between (seen under -race on a
// loaded machine, for Debounce, after every check was in place). Only an
// Unsubscribe that waited for deliveries in flight could rule that out, and
// it never waits (doc.go). That a check follows everything that could let
// Unsubscribe run first (a clock reading, a lock Unsubscribe also takes) is
// proven deterministically by TestAnUnsubscribeWhileATimeOperatorReadsItsClockStopsWhatFollows.
// Control (run): Interval's checks of the subscription in its tick removed,
// after is not zero for Interval.
func lateDeliveries[T any](tries int, op func(clk *racingClock, feed *rx.Subject[int]) rx.Observable[T]) (inFlight, after int64) {
	var inFlightN, afterN atomic.Int64
	for range tries {
		clk := &racingClock{Clock: rxtest.NewClock()}
		feed := rx.NewSubject[int]()
		var returned, settled atomic.Bool
		check := func() {
			switch {
			case settled.Load():
				afterN.Add(1)
			case returned.Load():
				inFlightN.Add(1)
			}
		}
		sub := op(clk, feed).Subscribe(rx.NewObserver(func(T) { check() }, func(error) { check() }, check))
		feed.OnNext(1)
		clk.Advance(time.Hour) // every timer is due; none has run yet
		var wg sync.WaitGroup
		first := clk.fire(&wg)
		sub.Unsubscribe()
		returned.Store(true)
		wg.Wait()
		settled.Store(true)
		run(&wg, first)
		clk.fire(&wg)
		wg.Wait()
	}
	return inFlightN.Load(), afterN.Load()
}

func TestTimerDrivenOperatorsDeliverNothingAfterUnsubscribeReturnedUnderARealRace(t *testing.T) {
	const tries = 300
	requireNoneAfter := func(name string, race func() (inFlight, after int64)) {
		t.Helper()
		inFlight, after := race()
		assert.Zero(t, after, "%s: notifications from timer callbacks begun after Unsubscribe returned", name)
		t.Logf("%s: %d of %d in-flight deliveries began after Unsubscribe returned (allowed: see lateDeliveries)", name, inFlight, tries)
	}
	requireNoneAfter("Debounce", func() (int64, int64) {
		return lateDeliveries(tries, func(clk *racingClock, feed *rx.Subject[int]) rx.Observable[int] {
			return rx.Debounce[int](feed, time.Second, clk)
		})
	})
	requireNoneAfter("BufferTime", func() (int64, int64) {
		return lateDeliveries(tries, func(clk *racingClock, feed *rx.Subject[int]) rx.Observable[[]int] {
			return rx.BufferTime[int](feed, time.Second, clk)
		})
	})
	requireNoneAfter("Interval", func() (int64, int64) {
		return lateDeliveries(tries, func(clk *racingClock, _ *rx.Subject[int]) rx.Observable[int] {
			return rx.Interval(time.Second, clk)
		})
	})
	requireNoneAfter("RetryBackoff", func() (int64, int64) {
		return lateDeliveries(tries, func(clk *racingClock, _ *rx.Subject[int]) rx.Observable[int] {
			return rx.RetryBackoff(rx.Concat(rx.Of(1), rx.Throw[int](rxtest.ErrTest)), 3, time.Second, time.Second, clk)
		})
	})
}
