package rx

import (
	"reflect"
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
func after(clk clock.Clock, d time.Duration, f func()) (stop func() bool) {
	if s, ok := clk.(Scheduler); ok {
		return s.Schedule(d, f)
	}
	return clk.AfterFunc(d, f).Stop
}

// realClock is the concrete type of clock.New().
var realClock = reflect.TypeOf(clock.New())

// stopwatch measures elapsed time on a clock. On the real clock it reads the
// monotonic clock only, which costs about half of a full time.Now.
type stopwatch struct {
	clk  clock.Clock
	base time.Time
	mono bool
}

func newStopwatch(clk clock.Clock) stopwatch {
	return stopwatch{clk: clk, base: clk.Now(), mono: reflect.TypeOf(clk) == realClock}
}

func (s *stopwatch) elapsed() time.Duration {
	if s.mono {
		return time.Since(s.base)
	}
	return s.clk.Now().Sub(s.base)
}
