package rx

import (
	"time"

	"github.com/benbjohnson/clock"
)

// timedIn is the source's observer of an operator that serialises the
// source's notifications with other events (its clock's ticks, a boundary's
// values) through one mailbox, whose handler is the operator.
type timedIn[T any] struct {
	mb  mailbox[timed[T]]
	src *scope // the source's subscription: a post waits under it
}

func (in *timedIn[T]) OnNext(v T) {
	in.mb.post(timed[T]{note: note[T]{kind: kindNext, v: v}}, in.src)
}
func (in *timedIn[T]) OnError(err error) {
	in.mb.postEnd(timed[T]{note: note[T]{kind: kindError, err: err}})
}
func (in *timedIn[T]) OnCompleted()    { in.mb.postEnd(timed[T]{note: note[T]{kind: kindCompleted}}) }
func (in *timedIn[T]) rxScope() *scope { return in.src }

// clocked is what the operators on a clock share (BufferTime, Debounce,
// Sample, WindowTime): the mailbox, one timer whose ticks it handles, and
// the time since subscription, against which periods are counted so that
// they do not drift.
type clocked[T any] struct {
	timedIn[T]
	clk   clock.Clock
	d     time.Duration
	sw    stopwatch
	timer timerSlot
	tick  func()
	ticks int64 // periods ended; the mailbox handler's
}

// startClock readies c with h as the mailbox's handler: ticks are posted
// while live is not cancelled, and live's cancellation closes the timer.
func (c *clocked[T]) startClock(h mailboxHandler[timed[T]], clk clock.Clock, d time.Duration, live *scope) {
	c.mb.h, c.clk, c.d, c.sw = h, clk, d, newStopwatch(clk)
	c.tick = func() {
		if live.cancelled() {
			return
		}
		c.mb.postEnd(timed[T]{tick: true})
	}
	live.onCancel(c.timer.close)
}

// periodEnded is a tick's check that the period it was armed for has ended:
// a clock that fired early is armed again for the rest, and it reports
// false. Otherwise it counts the period and, with next, arms the next one.
func (c *clocked[T]) periodEnded(next bool) bool {
	if rest := time.Duration(c.ticks+1)*c.d - c.sw.elapsed(); rest > 0 {
		c.timer.arm(c.clk, rest, c.tick)
		return false
	}
	c.ticks++
	if next {
		c.timer.arm(c.clk, time.Duration(c.ticks+1)*c.d-c.sw.elapsed(), c.tick)
	}
	return true
}

// stopClock closes the mailbox and the timer: nothing more is handled.
func (c *clocked[T]) stopClock() {
	c.mb.close()
	c.timer.close()
}
