package rx_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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
