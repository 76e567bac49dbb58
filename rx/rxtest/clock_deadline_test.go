package rxtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// A virtual deadline is an rx timer of the clock's own: it must not make
// Advance pay a real pause per instant it visits. It did: WithDeadline
// registered the clock as using *clock.Mock, whose Set sleeps 1 ms of real
// time, and Advance then moved that empty mock before every rx timer. An
// Interval stepped 500 times under a request's WithTimeout took 850 ms of
// real time against 6 ms without it. The bound below is loose (a loaded
// machine does 500 steps in far less); the pause it catches is a floor.
// Negative control (run): with WithDeadline calling useMock again, the
// 500 steps took over 500 ms and the test failed.
func TestAVirtualDeadlineCostsAdvanceNoRealPausePerInstant(t *testing.T) {
	clk := rxtest.NewClock()
	ctx, cancel := clk.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	n := 0
	sub := rx.Interval(time.Millisecond, clk).Subscribe(rx.NewObserver(func(int) { n++ }, nil, nil))
	start := time.Now()
	clk.Advance(500 * time.Millisecond)
	took := time.Since(start)
	sub.Unsubscribe()
	assert.Equal(t, 500, n)
	assert.Less(t, took, 400*time.Millisecond, "500 virtual instants took %v of real time", took)
	assert.NoError(t, ctx.Err())
	clk.Advance(time.Hour)
	assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded, "the deadline is still kept")
}

// Plain timers made after a deadline still move with Advance (they register
// themselves); the deadline no longer needs the mock for that. A guard for
// the fix above: it passes with and without it.
func TestAPlainTimerMadeAfterAVirtualDeadlineStillFiresOnAdvance(t *testing.T) {
	clk := rxtest.NewClock()
	_, cancel := clk.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	clk.Advance(time.Minute)
	tm := clk.Timer(time.Second)
	clk.Advance(time.Second - 1)
	select {
	case <-tm.C:
		t.Fatal("fired early")
	default:
	}
	clk.Advance(1)
	select {
	case at := <-tm.C:
		assert.Equal(t, clk.Start().Add(time.Minute+time.Second), at)
	case <-time.After(5 * time.Second): // catches a hang only
		t.Fatal("the plain timer did not fire")
	}
}
