package rx_test

import (
	"go/ast"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// unsubAtRead is a virtual clock whose k-th reading (counted from when the
// test arms it, after Subscribe has returned) has another goroutine call
// Unsubscribe and waits for it to return before the reading returns. A clock
// is user code: an operator that reads it between its check of the
// subscription and its delivery delivers after Unsubscribe has returned, and
// through this clock a test sees that at every reading, the same on every
// run. (Under a real race the same window is a few instructions wide: see
// TestTimerDrivenOperatorsDeliverNothingAfterUnsubscribeReturnedUnderARealRace.)
type unsubAtRead struct {
	*rxtest.Clock
	k int
	// lockedReads: the operator reads the clock under a lock its
	// cancellation takes (see Now).
	lockedReads bool
	reads       atomic.Int64
	armed       atomic.Bool
	sub         rx.Subscription

	returned atomic.Bool
	wg       sync.WaitGroup
}

func (c *unsubAtRead) Now() time.Time {
	if c.armed.Load() && c.reads.Add(1) == int64(c.k) {
		done := make(chan struct{})
		c.wg.Go(func() {
			c.sub.Unsubscribe()
			c.returned.Store(true)
			close(done)
		})
		// An operator that reads the clock holding a lock its cancellation
		// takes (Delay) has Unsubscribe, which has marked the subscription
		// ended by then, wait for the reading's caller, which is allowed:
		// the wait for it is bounded. For the others Unsubscribe returns,
		// and the bound only catches a hang.
		bound := 10 * time.Second
		if c.lockedReads {
			bound = 50 * time.Millisecond
		}
		select {
		case <-done:
		case <-time.After(bound):
			if !c.lockedReads {
				panic("Unsubscribe did not return in 10s")
			}
		}
	}
	return c.Clock.Now()
}

func (c *unsubAtRead) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *unsubAtRead) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// clockOp is one exported rx function that takes a clock, subscribed over a
// feed the schedule drives.
type clockOp struct {
	name string
	// subscribe subscribes the function's observable to an observer that
	// calls seen for every notification.
	subscribe func(clk *unsubAtRead, feed *rx.Subject[int], seen func()) rx.Subscription
	// lockedReads: see unsubAtRead.
	lockedReads bool
}

func observe[T any](o rx.Observable[T], seen func()) rx.Subscription {
	return o.Subscribe(rx.NewObserver(func(T) { seen() }, func(error) { seen() }, seen))
}

// clockOps lists every exported rx function with a clock.Clock parameter;
// TestEveryFunctionTakingAClockIsInTheClockReadingTable fails for one
// missing.
func clockOps() []clockOp {
	erring := func() rx.Observable[int] { return rx.Concat(rx.Of(1), rx.Throw[int](rxtest.ErrTest)) }
	return []clockOp{
		{"BufferTime", func(clk *unsubAtRead, feed *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.BufferTime[int](feed, time.Second, clk), seen)
		}, false},
		{"Debounce", func(clk *unsubAtRead, feed *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.Debounce[int](feed, time.Second, clk), seen)
		}, false},
		{"Delay", func(clk *unsubAtRead, feed *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.Delay[int](feed, time.Second, clk), seen)
		}, true},
		{"DelaySubscription", func(clk *unsubAtRead, _ *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.DelaySubscription(rx.Timestamp(rx.Of(1, 2), clk), time.Second, clk), seen)
		}, false},
		{"Interval", func(clk *unsubAtRead, _ *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.Interval(time.Second, clk), seen)
		}, false},
		{"RetryBackoff", func(clk *unsubAtRead, _ *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.RetryBackoff(rx.Timestamp(erring(), clk), 3, time.Second, time.Second, clk), seen)
		}, false},
		{"Sample", func(clk *unsubAtRead, feed *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.Sample[int](feed, time.Second, clk), seen)
		}, false},
		{"Throttle", func(clk *unsubAtRead, feed *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.Throttle[int](feed, time.Second, clk), seen)
		}, false},
		{"TimeInterval", func(clk *unsubAtRead, feed *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.TimeInterval[int](feed, clk), seen)
		}, false},
		{"Timeout", func(clk *unsubAtRead, feed *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.Timeout[int](feed, time.Second, clk), seen)
		}, false},
		{"TimeoutStage", func(clk *unsubAtRead, feed *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.TimeoutStage[int](feed, "feed", time.Second, clk), seen)
		}, false},
		{"Timer", func(clk *unsubAtRead, _ *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.Timer(time.Second, clk), seen)
		}, false},
		{"Timestamp", func(clk *unsubAtRead, feed *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.Timestamp[int](feed, clk), seen)
		}, false},
		{"WindowTime", func(clk *unsubAtRead, feed *rx.Subject[int], seen func()) rx.Subscription {
			return observe(rx.WindowTime[int](feed, time.Second, clk), seen)
		}, false},
	}
}

// runClockSchedule subscribes op with Unsubscribe at reading k (0: never),
// drives it through values, ticks and a completion, and returns how many
// readings were made, how many notifications started after Unsubscribe
// had returned, and how many there were. Readings made inside Subscribe
// are not counted (there is no Subscription to end yet).
func runClockSchedule(op clockOp, k int) (reads, late, delivered int64) {
	clk := &unsubAtRead{Clock: rxtest.NewClock(), k: k, lockedReads: op.lockedReads}
	feed := rx.NewSubject[int]()
	var lateN, seenN atomic.Int64
	seen := func() {
		seenN.Add(1)
		if clk.returned.Load() {
			lateN.Add(1)
		}
	}
	clk.sub = op.subscribe(clk, feed, seen)
	clk.armed.Store(true)
	feed.OnNext(1)
	clk.Advance(500 * time.Millisecond)
	feed.OnNext(2)
	clk.Advance(1500 * time.Millisecond)
	feed.OnNext(3)
	clk.Advance(2 * time.Second)
	feed.OnCompleted()
	clk.Advance(5 * time.Second)
	clk.wg.Wait()
	clk.sub.Unsubscribe()
	return clk.reads.Load(), lateN.Load(), seenN.Load()
}

// TestAnUnsubscribeWhileATimeOperatorReadsItsClockStopsWhatFollows unsubscribes,
// from another goroutine, at every reading of the clock each time-based
// operator makes over one schedule (values, ticks due, a completion), and
// requires that nothing starts after Unsubscribe has returned. Negative
// control: at 1e7b272 BufferTime and Sample re-armed their timer (reading
// the clock, and taking the lock Unsubscribe's timer close takes) between
// their check and the window they delivered, Debounce read the clock between
// its check and the value it delivered, and Throttle, Timestamp and
// TimeInterval read it and delivered without a check: this test failed for
// all six (the CI failure of the real-race test below was BufferTime's).
func TestAnUnsubscribeWhileATimeOperatorReadsItsClockStopsWhatFollows(t *testing.T) {
	for _, op := range clockOps() {
		t.Run(op.name, func(t *testing.T) {
			reads, late, seen := runClockSchedule(op, 0)
			require.Zero(t, late)
			require.Positive(t, reads, "the schedule reads the clock")
			require.Positive(t, seen, "the schedule has the operator deliver")
			for k := 1; k <= int(reads); k++ {
				_, late, _ := runClockSchedule(op, k)
				assert.Zero(t, late, "%s: notifications started after an Unsubscribe made at clock reading %d of %d had returned", op.name, k, reads)
			}
		})
	}
}

// TestEveryFunctionTakingAClockIsInTheClockReadingTable reads package rx's
// sources: every exported function with a clock.Clock parameter must be in
// clockOps, so that the next time-based operator cannot skip the schedule.
func TestEveryFunctionTakingAClockIsInTheClockReadingTable(t *testing.T) {
	listed := map[string]bool{}
	for _, op := range clockOps() {
		listed[op.name] = true
	}
	var missing []string
	n := 0
	for _, fd := range exportedFuncs(t) {
		if !takesClock(fd) {
			continue
		}
		n++
		if !listed[fd.Name.Name] {
			missing = append(missing, fd.Name.Name)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "exported rx functions taking a clock.Clock missing from clockOps")
	assert.GreaterOrEqual(t, n, 10, "found too few functions taking a clock: is the test reading package rx?")
}

func takesClock(fd *ast.FuncDecl) bool {
	for _, f := range fd.Type.Params.List {
		if sel, ok := f.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Clock" {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "clock" {
				return true
			}
		}
	}
	return false
}
