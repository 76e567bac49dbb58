package rxtest_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

var _ clock.Clock = (*rxtest.Clock)(nil)
var _ rx.Scheduler = (*rxtest.Clock)(nil)

func TestAdvanceRunsDueTimersInDueOrderFirstScheduledFirstOnTies(t *testing.T) {
	clk := rxtest.NewClock()
	var order []string
	var at []time.Duration
	add := func(d time.Duration, name string) {
		clk.Schedule(d, func() { order = append(order, name); at = append(at, clk.Elapsed()) })
	}
	add(30*time.Second, "c")
	add(10*time.Second, "a1")
	add(10*time.Second, "a2")
	add(20*time.Second, "b")
	add(10*time.Second, "a3")
	add(31*time.Second, "late")
	clk.Advance(30 * time.Second)
	assert.Equal(t, []string{"a1", "a2", "a3", "b", "c"}, order)
	assert.Equal(t, []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second}, at,
		"the clock reads each timer's due time while it runs")
	assert.Equal(t, 30*time.Second, clk.Elapsed())
	assert.Equal(t, 1, clk.Pending())
}

func TestAdvanceRunsCallbacksOnTheCallingGoroutineAndReturnsAfterThem(t *testing.T) {
	clk := rxtest.NewClock()
	var callbackStack, ourStack string
	ran := false
	clk.Schedule(time.Second, func() {
		buf := make([]byte, 64)
		callbackStack = string(buf[:runtime.Stack(buf, false)])
		ran = true
	})
	clk.Advance(time.Second)
	require.True(t, ran, "Advance returned before the callback ran")
	buf := make([]byte, 64)
	ourStack = string(buf[:runtime.Stack(buf, false)])
	assert.Equal(t, goroutineID(ourStack), goroutineID(callbackStack))
}

func goroutineID(stack string) string {
	var id string
	for i := len("goroutine "); i < len(stack) && stack[i] != ' '; i++ {
		id += string(stack[i])
	}
	return id
}

func TestWorkScheduledDuringAnAdvanceRunsIfItFallsDueInTheSpan(t *testing.T) {
	clk := rxtest.NewClock()
	var at []time.Duration
	var tick func()
	tick = func() {
		at = append(at, clk.Elapsed())
		clk.Schedule(time.Second, tick)
	}
	clk.Schedule(time.Second, tick)
	clk.Advance(3500 * time.Millisecond)
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, at)
	assert.Equal(t, 1, clk.Pending())
}

func TestAStoppedTimerDoesNotRun(t *testing.T) {
	clk := rxtest.NewClock()
	ran := false
	stop := clk.Schedule(time.Second, func() { ran = true })
	assert.True(t, stop())
	assert.False(t, stop(), "already stopped")
	clk.Advance(time.Minute)
	assert.False(t, ran)
	assert.Zero(t, clk.Pending())
}

func TestAdvancingFromATimerCallbackPanics(t *testing.T) {
	clk := rxtest.NewClock()
	clk.Schedule(time.Second, func() { clk.Advance(time.Second) })
	assert.PanicsWithValue(t, "rxtest: Advance called while the clock is already advancing", func() { clk.Advance(time.Second) })
}

func TestPlainClockTimersOnTheVirtualClockFireWhenAdvanced(t *testing.T) {
	clk := rxtest.NewClock()
	fired := make(chan time.Time, 1)
	clk.AfterFunc(5*time.Second, func() { fired <- clk.Now() })
	ctx, cancel := clk.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	clk.Advance(5 * time.Second)
	select {
	case at := <-fired:
		assert.Equal(t, clk.Start().Add(5*time.Second), at)
	case <-time.After(5 * time.Second):
		t.Fatal("the AfterFunc callback did not run")
	}
	assert.NoError(t, ctx.Err())
	clk.Advance(5 * time.Second)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the virtual deadline did not end the context")
	}
}

func TestTheRecorderReportsGrammarViolations(t *testing.T) {
	r := rxtest.NewRecorder[int](nil)
	r.OnNext(1)
	r.OnCompleted()
	require.NoError(t, r.GrammarErr())
	r.OnNext(2) // after the end
	assert.ErrorContains(t, r.GrammarErr(), "after OnCompleted")

	assert.NoError(t, rxtest.CheckGrammar([]rxtest.Event[int]{rxtest.Next(1, 1), rxtest.Error[int](2, rxtest.ErrTest)}))
	assert.Error(t, rxtest.CheckGrammar([]rxtest.Event[int]{rxtest.Completed[int](1), rxtest.Next(2, 1)}))
	assert.Error(t, rxtest.CheckGrammar([]rxtest.Event[int]{rxtest.Next(2, 1), rxtest.Next(1, 2)}), "time went backwards")
}

func TestHotAndColdObservablesLogTheirSubscriptions(t *testing.T) {
	clk := rxtest.NewClock()
	hot := rxtest.Hot(clk, rxtest.Next(100*time.Millisecond, 1), rxtest.Next(300*time.Millisecond, 2), rxtest.Completed[int](400*time.Millisecond))
	cold := rxtest.Cold(clk, rxtest.Next(50*time.Millisecond, 7), rxtest.Completed[int](60*time.Millisecond))
	res := rxtest.Start(clk, 200*time.Millisecond, time.Second, func() rx.Observable[int] { return rx.Concat[int](hot, cold) })
	assert.Equal(t, []rxtest.Event[int]{
		rxtest.Next(300*time.Millisecond, 2), rxtest.Next(450*time.Millisecond, 7), rxtest.Completed[int](460 * time.Millisecond),
	}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(200*time.Millisecond, 400*time.Millisecond)}, hot.Subscriptions())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(400*time.Millisecond, 460*time.Millisecond)}, cold.Subscriptions())
}
