package rx

import (
	"reflect"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// Scheduler is implemented by clocks that run timed callbacks themselves, on
// the goroutine that moves their time forward (rxtest.Clock does). The time
// operators use Schedule when the clock offers it, and clock.Clock.AfterFunc
// otherwise; either way they stay correct.
type Scheduler interface {
	// Schedule runs f once, d after now on the clock, unless the returned
	// stop function is called first; stop reports whether it prevented f.
	Schedule(d time.Duration, f func()) (stop func() bool)
}

// after runs f once d from now on clk.
//
// A clock is user code: one that calls f back from inside Schedule or
// AfterFunc, on the arming goroutine before arming returned, would run it
// inside the operator's arming, under the lock that arming holds (a
// timer's slot, a mailbox), and deadlock or re-enter it. Such a call is
// held until arming returns and f then runs on a goroutine of its own, as
// a real timer's does. A call from another goroutine while arming runs (a
// virtual clock advanced there, a timer due at once) runs f there and
// then, as a real timer's may: moved to a goroutine of rx's, a panic of
// the clock's inside f would end the program instead of reaching the
// goroutine that advanced it. The check costs two small allocations per
// arming on a clock other than the real one, which never calls back so
// and is armed as before.
func after(clk clock.Clock, d time.Duration, f func()) (stop func() bool) {
	if isRealClock(clk) {
		return clk.AfterFunc(d, f).Stop
	}
	a := &arming{f: f, g: curg()}
	if s, ok := clk.(Scheduler); ok {
		stop = s.Schedule(d, a.fire)
	} else {
		stop = clk.AfterFunc(d, a.fire).Stop
	}
	if a.state.Swap(armed) == firedEarly {
		go f()
	}
	return stop
}

// arming is after's record of one arming: whether it has returned, and
// whether the clock called back before it did.
type arming struct {
	f     func()
	g     uintptr      // curg() of the arming goroutine
	state atomic.Int32 // 0, then armed or firedEarly, whichever comes first
}

const (
	armed      = 1
	firedEarly = 2
)

func (a *arming) fire() {
	if curg() == a.g && a.state.CompareAndSwap(0, firedEarly) {
		return // inside the arming: after runs f once it has returned
	}
	a.f()
}

// armedTimer is a timer armed by armTimer; the zero value is no timer.
type armedTimer struct {
	real  *time.Timer
	other func() bool
}

// armTimer is after without the allocations the real clock's wrapper adds
// (its *clock.Timer and the Stop method value): on the real clock it arms a
// time.Timer itself, which is all clock.New().AfterFunc does.
func armTimer(clk clock.Clock, d time.Duration, f func()) armedTimer {
	if isRealClock(clk) {
		return armedTimer{real: time.AfterFunc(d, f)}
	}
	return armedTimer{other: after(clk, d, f)}
}

// stop stops the timer, if there is one.
func (a armedTimer) stop() {
	switch {
	case a.real != nil:
		a.real.Stop()
	case a.other != nil:
		a.other()
	}
}

// realClock is the concrete type of clock.New().
var realClock = reflect.TypeOf(clock.New())

// isRealClock reports whether clk is clock.New()'s clock, whose timers and
// readings rx can take from package time directly.
func isRealClock(clk clock.Clock) bool { return reflect.TypeOf(clk) == realClock }

// since is the time elapsed on clk since base; on the real clock (mono) it
// reads the monotonic clock only, which costs about half of a full time.Now.
func since(clk clock.Clock, base time.Time, mono bool) time.Duration {
	if mono {
		return time.Since(base)
	}
	return clk.Now().Sub(base)
}

// stopwatch measures elapsed time on a clock. On the real clock it reads the
// monotonic clock only, which costs about half of a full time.Now.
type stopwatch struct {
	clk  clock.Clock
	base time.Time
	mono bool
}

func newStopwatch(clk clock.Clock) stopwatch {
	return stopwatch{clk: clk, base: clk.Now(), mono: isRealClock(clk)}
}

func (s *stopwatch) elapsed() time.Duration { return since(s.clk, s.base, s.mono) }
