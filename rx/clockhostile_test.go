package rx_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// A clock is user code, and it is read inside Subscribe too (Timer and
// Interval arm there, Timeout arms before subscribing its source, a source
// delivering inside Subscribe has Delay, Throttle, Timestamp read per
// value). hostileClock misbehaves at its k-th reading or arming, counted
// from construction, so inside Subscribe as well as after it: it panics,
// calls the timer's function back at once from inside Schedule (into the
// stream, during Subscribe), or cancels the consumer's context.

type clockBoom struct{}

// hostileClock is a virtual clock that misbehaves once, at its k-th call
// of the kind mode names.
type hostileClock struct {
	*rxtest.Clock
	mode     string // "panic-now", "panic-schedule", "sync-schedule", "cancel"
	k        int64
	nows     atomic.Int64
	arms     atomic.Int64
	cancel   func()
	misfired atomic.Bool
}

func (c *hostileClock) Now() time.Time {
	n := c.nows.Add(1)
	switch {
	case c.mode == "panic-now" && n == c.k:
		c.misfired.Store(true)
		panic(clockBoom{})
	case c.mode == "cancel" && n+c.arms.Load() == c.k:
		c.misfired.Store(true)
		c.cancel()
	}
	return c.Clock.Now()
}

func (c *hostileClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *hostileClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

func (c *hostileClock) Schedule(d time.Duration, f func()) (stop func() bool) {
	n := c.arms.Add(1)
	switch {
	case c.mode == "panic-schedule" && n == c.k:
		c.misfired.Store(true)
		panic(clockBoom{})
	case c.mode == "sync-schedule" && n == c.k:
		c.misfired.Store(true)
		f() // fired already, from inside the arming
		return func() bool { return false }
	case c.mode == "cancel" && n+c.nows.Load() == c.k:
		c.misfired.Store(true)
		c.cancel()
	}
	return c.Clock.Schedule(d, f)
}

func (c *hostileClock) AfterFunc(time.Duration, func()) *clock.Timer {
	panic("rx armed a timer through AfterFunc on a clock that has Schedule")
}

// hostileOp is one exported rx function that takes a clock, over a source
// that delivers 1 and 2 inside Subscribe and then what the schedule feeds.
type hostileOp struct {
	name string
	make func(clk clock.Clock, src rx.Observable[int]) func(log func(string)) rx.Observable[string]
}

// asNotes turns any stream into strings, so that one table holds them all.
func asNotes[T any](o rx.Observable[T]) func(log func(string)) rx.Observable[string] {
	return func(func(string)) rx.Observable[string] {
		return rx.Map(o, func(v T) string {
			if _, ok := any(v).(rx.Observable[int]); ok {
				return "window" // not subscribed: its values are not the probe's
			}
			return fmt.Sprint(v)
		})
	}
}

// hostileOps lists every exported rx function with a clock.Clock parameter
// (TestEveryFunctionTakingAClockIsInTheHostileClockTable).
func hostileOps() []hostileOp {
	return []hostileOp{
		{"BufferTime", func(clk clock.Clock, src rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.BufferTime(src, time.Second, clk))
		}},
		{"Debounce", func(clk clock.Clock, src rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.Debounce(src, time.Second, clk))
		}},
		{"Delay", func(clk clock.Clock, src rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.Delay(src, time.Second, clk))
		}},
		{"DelaySubscription", func(clk clock.Clock, src rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.DelaySubscription(src, time.Second, clk))
		}},
		{"Interval", func(clk clock.Clock, _ rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.Take(rx.Interval(time.Second, clk), 4))
		}},
		{"RetryBackoff", func(clk clock.Clock, src rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.RetryBackoff(rx.Concat(src, rx.Throw[int](errTestClock)), 2, time.Second, time.Second, clk))
		}},
		{"Sample", func(clk clock.Clock, src rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.Sample(src, time.Second, clk))
		}},
		{"Throttle", func(clk clock.Clock, src rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.Throttle(src, time.Second, clk))
		}},
		{"TimeInterval", func(clk clock.Clock, src rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.TimeInterval(src, clk))
		}},
		{"Timeout", func(clk clock.Clock, src rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.Timeout(src, time.Second, clk))
		}},
		{"TimeoutStage", func(clk clock.Clock, src rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.TimeoutStage(src, "feed", time.Second, clk))
		}},
		{"Timer", func(clk clock.Clock, _ rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.Timer(time.Second, clk))
		}},
		{"Timestamp", func(clk clock.Clock, src rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.Timestamp(src, clk))
		}},
		{"WindowTime", func(clk clock.Clock, src rx.Observable[int]) func(func(string)) rx.Observable[string] {
			return asNotes(rx.WindowTime(src, time.Second, clk))
		}},
	}
}

var errTestClock = fmt.Errorf("source failed")

// hostileResult is what one run saw.
type hostileResult struct {
	log      []string // notifications, "unsubscribed", "panic ..."
	late     []string // notifications after Unsubscribe returned, or after a panic out of Subscribe
	pending  int      // timers left armed at the end
	misfired bool
	hung     bool
}

// runHostile subscribes op with a clock misbehaving at its k-th call of
// mode's kind, drives a schedule, unsubscribes and advances past every
// due time. With via "First" or "All" the consumer is First or a for loop
// over All under a ctx the "cancel" mode ends.
func runHostile(op hostileOp, mode string, k int64, via string) (r hostileResult) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := &hostileClock{Clock: rxtest.NewClock(), mode: mode, k: k, cancel: cancel}
	feed := rx.NewSubject[int]()
	var mu sync.Mutex
	var over atomic.Bool // Unsubscribe returned, or Subscribe panicked
	log := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		r.log = append(r.log, s)
		if over.Load() {
			r.late = append(r.late, s)
		}
	}
	obs := op.make(clk, rx.Concat(rx.Of(1, 2), feed))(log)
	done := make(chan struct{})
	go func() {
		defer close(done)
		step := func(f func()) {
			if p := recovered(f); p != nil {
				log(fmt.Sprintf("panic %T", p))
			}
		}
		switch via {
		case "Subscribe":
			var sub rx.Subscription
			step(func() {
				sub = obs.Subscribe(rx.NewObserver(func(v string) { log("next " + v) },
					func(err error) { log("error " + err.Error()) }, func() { log("completed") }))
			})
			if sub == nil {
				over.Store(true) // Subscribe panicked: no one can unsubscribe
			}
			step(func() { feed.OnNext(3) })
			step(func() { clk.Advance(500 * time.Millisecond) })
			step(func() { feed.OnNext(4) })
			step(func() { clk.Advance(1500 * time.Millisecond) })
			if sub != nil {
				sub.Unsubscribe()
				log("unsubscribed")
				over.Store(true)
			}
		case "First", "All":
			// Virtual time passes on another goroutine while the consumer
			// waits, 100 ms a step for 30 s, and then ctx ends (a stream
			// that has nothing more to say after the clock misbehaved).
			var finished atomic.Bool
			var adv sync.WaitGroup
			adv.Go(func() {
				for range 300 {
					if finished.Load() {
						return
					}
					step(func() { clk.Advance(100 * time.Millisecond) })
				}
				cancel()
			})
			step(func() {
				if via == "First" {
					v, err := rx.First(ctx, obs)
					log(fmt.Sprint("first ", v, " ", err))
					return
				}
				for v, err := range rx.All(ctx, obs) {
					log(fmt.Sprint("all ", v, " ", err))
				}
			})
			over.Store(true)
			finished.Store(true)
			adv.Wait()
		}
		// Nothing may come of what is left: values, ticks, the end.
		step(func() { feed.OnNext(5) })
		step(func() { clk.Advance(10 * time.Second) })
		step(func() { feed.OnCompleted() })
		step(func() { clk.Advance(10 * time.Second) })
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second): // catches a hang only (a deadlock on a clock that calls back)
		r.hung = true
		return r
	}
	r.pending = clk.Pending()
	r.misfired = clk.misfired.Load()
	return r
}

// TestAHostileClockInsideSubscribeLeavesNothingBehindAndDeliversNothingLate
// runs every function taking a clock with a clock that panics (reading or
// arming), calls a timer back from inside its arming, or cancels the
// consumer's ctx, at each of its calls in turn (inside Subscribe and
// after), subscribed plainly, by First and by All. After Unsubscribe
// returned — or a panic out of Subscribe, which leaves the caller no
// Subscription — nothing is delivered, no timer is left armed, no goroutine
// is left, nothing hangs; a panic surfaces as the clock's own (no other
// panic in its wake).
//
// Negative controls (the runs that found the defects, at 4b8cbd4):
//   - with observableFunc.Subscribe and timeoutObservable.Subscribe
//     calling their function directly (no root scope released on a panic):
//     "Debounce, panic-now@3 via Subscribe: [panic rx_test.clockBoom next
//     1]: delivered [next 1] after the end", Delay the same, "Timeout,
//     panic-now@2 via Subscribe: 1 timers left armed" (TimeoutStage too);
//   - with after calling the clock's Schedule with f itself (a callback
//     from inside the arming runs under the arming's lock): "BufferTime,
//     sync-schedule@1 via Subscribe: hung", and Delay, Interval and Sample,
//     via Subscribe, First and All (RX_HOSTILE_MODES=sync-schedule runs
//     that mode alone).
func TestAHostileClockInsideSubscribeLeavesNothingBehindAndDeliversNothingLate(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, op := range hostileOps() {
		for _, mode := range hostileModes() {
			for _, via := range []string{"Subscribe", "First", "All"} {
				if mode == "cancel" && via == "Subscribe" {
					continue // no ctx
				}
				for k := int64(1); k <= 12; k++ {
					r := runHostile(op, mode, k, via)
					label := fmt.Sprintf("%s, %s@%d via %s: %v", op.name, mode, k, via, r.log)
					if r.hung {
						t.Errorf("%s: hung", label)
						continue
					}
					if !r.misfired {
						break // fewer calls than k: the later k are the same run
					}
					if len(r.late) > 0 {
						t.Errorf("%s: delivered %v after the end", label, r.late)
					}
					if r.pending != 0 {
						t.Errorf("%s: %d timers left armed", label, r.pending)
					}
					for _, s := range r.log {
						if strings.HasPrefix(s, "panic") && s != "panic rx_test.clockBoom" {
							t.Errorf("%s: a panic that is not the clock's: %s", label, s)
						}
					}
					ends := slices.IndexFunc(r.log, func(s string) bool {
						return s == "completed" || strings.HasPrefix(s, "error")
					})
					if ends >= 0 && slices.ContainsFunc(r.log[ends+1:], func(s string) bool { return strings.HasPrefix(s, "next") }) {
						t.Errorf("%s: a value after the terminal", label)
					}
				}
			}
		}
	}
}

func hostileModes() []string {
	if m := os.Getenv("RX_HOSTILE_MODES"); m != "" {
		return strings.Fields(m)
	}
	return []string{"panic-now", "panic-schedule", "sync-schedule", "cancel"}
}

func TestEveryFunctionTakingAClockIsInTheHostileClockTable(t *testing.T) {
	listed := map[string]bool{}
	for _, op := range hostileOps() {
		listed[op.name] = true
	}
	for _, fd := range exportedFuncs(t) {
		if takesClock(fd) && !listed[fd.Name.Name] {
			t.Errorf("%s takes a clock.Clock and is missing from hostileOps", fd.Name.Name)
		}
	}
}
