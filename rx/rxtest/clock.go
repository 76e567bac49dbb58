package rxtest

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// epoch is the instant every Clock starts at.
var epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Clock is a virtual clock for tests. It satisfies clock.Clock, so it can be
// injected wherever production code takes one, and rx.Scheduler, so the rx
// time operators schedule on it directly: Advance runs every rx timer that
// falls due in the span, in due order (first scheduled first on ties), on the
// calling goroutine, setting the clock to each timer's due time before running
// it, and returns only when those callbacks have returned. Work they schedule
// that falls due within the span runs too.
//
// After, Sleep, WithTimeout and WithDeadline are timed as rx timers are.
// Timers made through the other plain clock.Clock methods (AfterFunc, Timer,
// Ticker, Tick) behave as *clock.Mock's do: Advance moves them, but
// AfterFunc callbacks run on their own goroutines, and a Timer's send is
// made inside Advance, under the mock's lock: a Timer Reset while the value
// of its last firing is still in C (which a time.Timer allows since Go
// 1.23) makes the Advance that reaches it again wait until C is read.
type Clock struct {
	now atomic.Int64 // nanoseconds since its start

	mu        sync.Mutex
	queue     timerHeap
	seq       uint64        // timers ever scheduled
	changed   chan struct{} // closed when a timer is scheduled; made on demand
	advancing bool

	mockMu  sync.Mutex
	mock    *clock.Mock
	foreign atomic.Int64
}

// NewClock returns a Clock at a fixed instant (2026-01-01T00:00:00Z) with nothing scheduled.
func NewClock() *Clock {
	return &Clock{}
}

// Start returns the instant the clock started at.
func (c *Clock) Start() time.Time { return epoch }

// Now returns the current virtual time.
func (c *Clock) Now() time.Time { return epoch.Add(time.Duration(c.now.Load())) }

// Elapsed returns the virtual time since its start.
func (c *Clock) Elapsed() time.Duration { return time.Duration(c.now.Load()) }

// Since returns the virtual time elapsed since t.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until returns the virtual time until t.
func (c *Clock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// never is the due time of a timer whose duration would pass the end of
// time: Advance never reaches it.
const never = math.MaxInt64

// addClamped returns now+d, or never when that would overflow.
func addClamped(now int64, d time.Duration) int64 {
	if int64(d) > never-now {
		return never
	}
	return now + int64(d)
}

// Schedule implements rx.Scheduler: f runs inside the Advance call that
// reaches now+d. A d <= 0 runs at the next Advance (even Advance(0)). A d so
// large that now+d would overflow is clamped: such a timer never runs.
func (c *Clock) Schedule(d time.Duration, f func()) (stop func() bool) {
	if d < 0 {
		d = 0
	}
	c.mu.Lock()
	c.seq++
	t := &timer{due: addClamped(c.now.Load(), d), seq: c.seq, f: f, index: -1}
	heap.Push(&c.queue, t)
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.index < 0 {
			return false
		}
		heap.Remove(&c.queue, t.index)
		return true
	}
}

// Scheduled returns how many rx timers have ever been scheduled on the clock.
func (c *Clock) Scheduled() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int(c.seq)
}

// Pending returns how many rx timers are armed.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queue.Len()
}

// nextDue returns the virtual time (since the start) of the earliest rx
// timer that can still run, and whether there is one.
func (c *Clock) nextDue() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queue.Len() == 0 || c.queue[0].due >= never {
		return 0, false
	}
	return time.Duration(max(c.queue[0].due, c.now.Load())), true
}

// BlockUntil waits, for at most bound of real time, until at least n timers
// are pending on the clock — rx timers and the waits of Sleep and After,
// which count as pending until they are due — so a test can Advance once a
// sleeper on another goroutine has registered. It returns an error saying
// how many were pending if the bound passes first.
func (c *Clock) BlockUntil(n int, bound time.Duration) error {
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		pending := c.queue.Len()
		if pending >= n {
			c.mu.Unlock()
			return nil
		}
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return fmt.Errorf("rxtest: waited %v for %d pending timers, %d are pending", bound, n, pending)
		}
	}
}

// Advance moves the clock forward by d, running the rx timers due on the way.
// A d that would pass the end of time is clamped: Advance stops just short of
// it, so timers whose own duration was clamped never run. Calling it from a
// timer callback, or from two goroutines at once, panics: time has one driver.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic("rxtest: Advance with a negative duration")
	}
	c.advanceTo(min(addClamped(c.now.Load(), d), never-1))
}

// AdvanceTo moves the clock to its start + at (which must not be in the past).
func (c *Clock) AdvanceTo(at time.Duration) {
	if int64(at) < c.now.Load() {
		panic("rxtest: AdvanceTo a time in the past")
	}
	c.advanceTo(min(int64(at), never-1))
}

func (c *Clock) advanceTo(target int64) {
	c.mu.Lock()
	if c.advancing {
		c.mu.Unlock()
		panic("rxtest: Advance called while the clock is already advancing")
	}
	c.advancing = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.advancing = false
		c.mu.Unlock()
	}()
	for {
		c.mu.Lock()
		if c.queue.Len() == 0 || c.queue[0].due > target {
			c.now.Store(target)
			c.mu.Unlock()
			break
		}
		t := heap.Pop(&c.queue).(*timer)
		if t.due > c.now.Load() {
			c.now.Store(t.due)
		}
		c.mu.Unlock()
		c.syncMock()
		t.f()
	}
	c.syncMock()
}

// syncMock moves the embedded mock to the virtual time when foreign timers
// exist, so they fire too.
func (c *Clock) syncMock() {
	if c.foreign.Load() == 0 {
		return
	}
	c.mockMu.Lock()
	defer c.mockMu.Unlock()
	if now := c.Now(); !c.mock.Now().Equal(now) {
		c.mock.Set(now)
	}
}

func (c *Clock) useMock() *clock.Mock {
	c.mockMu.Lock()
	if c.mock == nil {
		c.mock = clock.NewMock()
	}
	c.mockMu.Unlock()
	c.foreign.Add(1)
	c.syncMock()
	return c.mock
}

// After is clock.Clock's After, on the virtual time: the channel receives
// the time inside the Advance call that reaches it (it is buffered, so the
// send never waits). Until then it counts as pending (Pending, BlockUntil).
func (c *Clock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.Now()
		return ch
	}
	c.Schedule(d, func() { ch <- c.Now() })
	return ch
}

// AfterFunc is clock.Clock's AfterFunc: f runs on its own goroutine once
// Advance passes its time. rx operators use Schedule instead.
func (c *Clock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	return c.useMock().AfterFunc(d, f)
}

// Sleep blocks until another goroutine advances the clock past d. The sleep
// is pending from the call on, so BlockUntil can wait for it to register.
func (c *Clock) Sleep(d time.Duration) { <-c.After(d) }

// Tick is clock.Clock's Tick, on the virtual time.
func (c *Clock) Tick(d time.Duration) <-chan time.Time { return c.useMock().Tick(d) }

// Ticker is clock.Clock's Ticker, on the virtual time.
func (c *Clock) Ticker(d time.Duration) *clock.Ticker { return c.useMock().Ticker(d) }

// Timer is clock.Clock's Timer, on the virtual time.
func (c *Clock) Timer(d time.Duration) *clock.Timer { return c.useMock().Timer(d) }

// WithDeadline is clock.Clock's WithDeadline, on the virtual time, timed
// like an rx timer: the context ends with context.DeadlineExceeded inside
// the Advance call that reaches d (it is pending until then), so a test
// that has advanced past d finds it ended. Its Err, Cause and Done are safe
// from any goroutine, and contexts derived from it end with its error.
// (*clock.Mock's deadline context, used before, ended on a goroutine of its
// own some time after Advance, and read its error without its lock: the
// race detector reported an Err read while the deadline passed.)
func (c *Clock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	// No mock here: plain timers register it themselves when made, and
	// moving an empty one costs Advance its 1 ms real sleep per instant.
	if cur, ok := parent.Deadline(); ok && !cur.After(d) {
		return context.WithCancel(parent) // the parent's deadline comes first
	}
	inner, cancelInner := context.WithCancelCause(parent)
	ctx := &deadlineCtx{inner: inner, cancelInner: cancelInner, deadline: d, done: make(chan struct{})}
	stopParent := context.AfterFunc(inner, func() { ctx.end(inner.Err(), nil) })
	var stopTimer func() bool
	if wait := c.Until(d); wait <= 0 {
		ctx.end(context.DeadlineExceeded, context.DeadlineExceeded)
	} else {
		stopTimer = c.Schedule(wait, func() { ctx.end(context.DeadlineExceeded, context.DeadlineExceeded) })
	}
	ctx.mu.Lock()
	ended := ctx.err != nil
	if !ended {
		ctx.stopTimer, ctx.stopParent = stopTimer, stopParent
	}
	ctx.mu.Unlock()
	if ended { // already: nothing is left to stop it for
		if stopTimer != nil {
			stopTimer()
		}
		stopParent()
	}
	return ctx, func() { ctx.end(context.Canceled, context.Canceled) }
}

// WithTimeout is WithDeadline at now+d.
func (c *Clock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return c.WithDeadline(parent, c.Now().Add(d))
}

// deadlineCtx is a context ended by a virtual deadline. Its values, Cause
// included, are those of inner, a child of the parent that it cancels with
// its own cause when it ends; its Done channel is its own, so contexts
// derived from it take its error (not inner's).
type deadlineCtx struct {
	inner       context.Context
	cancelInner context.CancelCauseFunc
	deadline    time.Time
	done        chan struct{}

	mu         sync.Mutex
	err        error
	stopTimer  func() bool
	stopParent func() bool
}

// end ends ctx with err (first call wins). cause, when not nil, cancels
// inner with it first, so that Cause reports it once Done is closed; nil
// means inner has ended already (its parent did).
func (ctx *deadlineCtx) end(err, cause error) {
	ctx.mu.Lock()
	if ctx.err != nil {
		ctx.mu.Unlock()
		return
	}
	ctx.err = err
	stopTimer, stopParent := ctx.stopTimer, ctx.stopParent
	ctx.mu.Unlock()
	if cause != nil {
		ctx.cancelInner(cause)
	}
	close(ctx.done)
	if stopTimer != nil {
		stopTimer()
	}
	if stopParent != nil {
		stopParent()
	}
}

func (ctx *deadlineCtx) Deadline() (time.Time, bool) { return ctx.deadline, true }
func (ctx *deadlineCtx) Done() <-chan struct{}       { return ctx.done }
func (ctx *deadlineCtx) Value(key any) any           { return ctx.inner.Value(key) }

func (ctx *deadlineCtx) Err() error {
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	return ctx.err
}

func (ctx *deadlineCtx) String() string {
	return fmt.Sprintf("rxtest.Clock.WithDeadline(%s)", ctx.deadline)
}

type timer struct {
	due   int64
	seq   uint64
	f     func()
	index int
}

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].due != h[j].due {
		return h[i].due < h[j].due
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*h = old[:n-1]
	return t
}
