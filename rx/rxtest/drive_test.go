package rxtest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// consumed runs a consumer loop over a time-driven pipeline under Drive and
// returns what it saw, each value with its virtual time.
func consumed(clk *rxtest.Clock, pipeline rx.Observable[int]) ([]string, error) {
	var seen []string
	for v, err := range rx.All(context.Background(), rxtest.Drive(clk, pipeline)) {
		if err != nil {
			return seen, err
		}
		seen = append(seen, fmt.Sprintf("%v:%d", clk.Elapsed(), v))
		if v == 25 {
			break
		}
	}
	return seen, nil
}

// A pipeline that mixes a synchronous start, two timers merged, a debounced
// burst and a bound: the consumer loop sees the same values at the same
// virtual times on every one of 1,000 runs (run it with -race). Negative
// control: the same loop over rx.All without Drive never gets past the
// synchronous start (nothing advances the clock; it ends with its context,
// see TestALoopOverATimeDrivenPipelineWithoutDriveWaitsForever), and a
// consumer that advanced the clock from another goroutine on its own
// schedule raced its loop body (values arrived late and merged, see the
// issue's report).
func TestAConsumerLoopInVirtualTimeIsDeterministicOverAThousandRuns(t *testing.T) {
	build := func(clk *rxtest.Clock) rx.Observable[int] {
		fast := rx.Map(rx.Interval(300*time.Millisecond, clk), func(i int) int { return 10 + i })
		slow := rx.Map(rx.Interval(time.Second, clk), func(i int) int { return 20 + i })
		burst := rx.Debounce(rx.Take(rx.Interval(10*time.Millisecond, clk), 5), 100*time.Millisecond, clk)
		return rx.Timeout(rx.StartWith(rx.Merge(fast, slow, rx.Map(burst, func(i int) int { return 30 + i })), 0, 1), 2*time.Second, clk)
	}
	clk := rxtest.NewClock()
	want, err := consumed(clk, build(clk))
	require.NoError(t, err)
	// 0 and 1 at once; the burst's last value (4) when the burst completes
	// at 50ms (Debounce flushes on completion); then the two intervals.
	require.Equal(t, []string{"0s:0", "0s:1", "50ms:34", "300ms:10", "600ms:11", "900ms:12", "1s:20", "1.2s:13"}, want[:8])
	// The loop breaks at the first 25: fast tick 15 (value 25) at
	// 16 × 300ms; slow ticks reach only 20+3 by then.
	require.Equal(t, "4.8s:25", want[len(want)-1])
	for i := range 1000 {
		clk := rxtest.NewClock()
		got, err := consumed(clk, build(clk))
		require.NoError(t, err, "run %d", i)
		require.Equal(t, want, got, "run %d", i)
	}
}

func TestALoopOverATimeDrivenPipelineWithoutDriveWaitsForever(t *testing.T) {
	clk := rxtest.NewClock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond) // real time: the wait is the subject
	defer cancel()
	var vs []int
	var last error
	for v, err := range rx.All(ctx, rx.StartWith(rx.Interval(time.Second, clk), -1)) {
		if err != nil {
			last = err
			break
		}
		vs = append(vs, v)
	}
	assert.Equal(t, []int{-1}, vs)
	assert.ErrorIs(t, last, context.DeadlineExceeded, "nothing moved the clock")
}

// A stream that waits while nothing is scheduled fails with ErrStalled
// rather than leaving the loop waiting. Negative control: without the
// stall check Drive's goroutine would return and the loop below would wait
// until the test's deadline.
func TestDriveFailsAStreamThatVirtualTimeCannotMoveOn(t *testing.T) {
	clk := rxtest.NewClock()
	var vs []int
	var last error
	for v, err := range rx.All(context.Background(), rxtest.Drive(clk, rx.Concat(rx.Take(rx.Interval(time.Second, clk), 2), rx.Never[int]()))) {
		if err != nil {
			last = err
			break
		}
		vs = append(vs, v)
	}
	assert.Equal(t, []int{0, 1}, vs)
	assert.ErrorIs(t, last, rxtest.ErrStalled)
	assert.Equal(t, 2*time.Second, clk.Elapsed())
}

// First and Collect consume a driven stream too.
func TestFirstAndCollectConsumeADrivenStream(t *testing.T) {
	clk := rxtest.NewClock()
	v, err := rx.First(context.Background(), rxtest.Drive(clk, rx.Skip(rx.Interval(time.Minute, clk), 2)))
	require.NoError(t, err)
	assert.Equal(t, 2, v)
	assert.Equal(t, 3*time.Minute, clk.Elapsed())

	clk = rxtest.NewClock()
	vs, err := rx.Collect(context.Background(), rxtest.Drive(clk, rx.Take(rx.Interval(time.Minute, clk), 3)))
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2}, vs)
}
