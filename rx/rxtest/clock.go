package rxtest

import (
	"container/heap"
	"context"
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
// Timers made through the plain clock.Clock methods (AfterFunc, Timer, Ticker,
// After, Sleep, WithTimeout) behave as *clock.Mock's do: Advance moves them,
// but their callbacks and channel sends happen on their own goroutines.
type Clock struct {
	now atomic.Int64 // nanoseconds since its start

	mu        sync.Mutex
	queue     timerHeap
	seq       uint64 // timers ever scheduled
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

// Schedule implements rx.Scheduler: f runs inside the Advance call that
// reaches now+d. A d <= 0 runs at the next Advance (even Advance(0)).
func (c *Clock) Schedule(d time.Duration, f func()) (stop func() bool) {
	if d < 0 {
		d = 0
	}
	c.mu.Lock()
	c.seq++
	t := &timer{due: c.now.Load() + int64(d), seq: c.seq, f: f, index: -1}
	heap.Push(&c.queue, t)
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

// Advance moves the clock forward by d, running the rx timers due on the way.
// Calling it from a timer callback, or from two goroutines at once, panics:
// time has one driver.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic("rxtest: Advance with a negative duration")
	}
	c.advanceTo(c.now.Load() + int64(d))
}

// AdvanceTo moves the clock to its start + at (which must not be in the past).
func (c *Clock) AdvanceTo(at time.Duration) {
	if int64(at) < c.now.Load() {
		panic("rxtest: AdvanceTo a time in the past")
	}
	c.advanceTo(int64(at))
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

// After is clock.Clock's After, on the virtual time.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.useMock().After(d) }

// AfterFunc is clock.Clock's AfterFunc: f runs on its own goroutine once
// Advance passes its time. rx operators use Schedule instead.
func (c *Clock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	return c.useMock().AfterFunc(d, f)
}

// Sleep blocks until another goroutine advances the clock past d.
func (c *Clock) Sleep(d time.Duration) { c.useMock().Sleep(d) }

// Tick is clock.Clock's Tick, on the virtual time.
func (c *Clock) Tick(d time.Duration) <-chan time.Time { return c.useMock().Tick(d) }

// Ticker is clock.Clock's Ticker, on the virtual time.
func (c *Clock) Ticker(d time.Duration) *clock.Ticker { return c.useMock().Ticker(d) }

// Timer is clock.Clock's Timer, on the virtual time.
func (c *Clock) Timer(d time.Duration) *clock.Timer { return c.useMock().Timer(d) }

// WithDeadline is clock.Clock's WithDeadline, on the virtual time.
func (c *Clock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return c.useMock().WithDeadline(parent, d)
}

// WithTimeout is clock.Clock's WithTimeout, on the virtual time.
func (c *Clock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return c.useMock().WithTimeout(parent, d)
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
