package rxbench

import (
	"context"
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/reactivex/rxgo/v2"
	"github.com/samber/ro"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// A bounded stand-in for an endless source: if Take(1) does not stop its
// source, the source runs all of it, and an endless one would never return.
const finite = 10_000

func TestRxTakeStopsASynchronousSourceAfterTheFirstValue(t *testing.T) {
	emitted := 0
	src := rx.Do(rx.Range(0, finite), func(int) { emitted++ })
	vs, err := rx.Collect(context.Background(), rx.Take(src, 1))
	require.NoError(t, err)
	assert.Equal(t, []int{0}, vs)
	assert.Equal(t, 1, emitted)
}

func TestRoTakeDoesNotStopASynchronousSource(t *testing.T) {
	emitted := int64(0)
	src := ro.Pipe2(ro.Range(0, finite), ro.Tap[int64](func(int64) { emitted++ }, nil, nil), ro.Take[int64](1))
	vs, err := ro.Collect(src)
	require.NoError(t, err)
	assert.Equal(t, []int64{0}, vs)
	// Every value was produced after Take(1) had completed: over an endless
	// synchronous source (ro.Range(0, math.MaxInt64)) Subscribe never returns.
	// rx.Take stops the same shape after one value (the test above).
	assert.Equal(t, int64(finite), emitted)
}

func TestRxGoTakeLeavesItsProducerRunningUntilTheContextIsCancelled(t *testing.T) {
	exited := make(chan struct{})
	src := rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
		defer close(exited)
		for i := 0; rxgo.Of(i).SendContext(ctx, next); i++ {
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := sumRxGo(src.Take(1).Observe(rxgo.WithContext(ctx)))
	require.NoError(t, err)
	require.Equal(t, 0, s)

	// Take has closed its output, but the producer is parked on a send
	// nobody will receive: only the context can release it.
	leak := goleak.Find()
	require.Error(t, leak, "the producer is still running after Take completed")
	assert.Contains(t, leak.Error(), "TestRxGoTakeLeavesItsProducerRunningUntilTheContextIsCancelled")
	cancel()
	goleak.VerifyNone(t)
}
