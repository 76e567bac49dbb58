package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET OnErrorResumeNextTest (OnErrorResumeNext_ErrorMultiple,
// _EmptyReturnThrowAndMore shape): each source after the previous has
// ended, failed or completed, the errors dropped, completion after the
// last. Negative control: ending on an error (as Concat does) gave
// OnError(220) and failed the case.
func TestOnErrorResumeNextContinuesAfterAnErrorOrACompletion(t *testing.T) {
	clk := rxtest.NewClock()
	o1 := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), rxtest.Error[int](ms(220), rxtest.ErrTest))
	o2 := rxtest.Hot(clk, rxtest.Next(ms(230), 3), rxtest.Completed[int](ms(240)))
	o3 := rxtest.Hot(clk, rxtest.Next(ms(250), 4), rxtest.Error[int](ms(260), rxtest.ErrTest))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.OnErrorResumeNext[int](o1, o2, o3) })
	assert.Equal(t, []rxtest.Event[int]{
		rxtest.Next(ms(210), 2), rxtest.Next(ms(230), 3), rxtest.Next(ms(250), 4), rxtest.Completed[int](ms(260)),
	}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(220))}, o1.Subscriptions())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(220), ms(240))}, o2.Subscriptions())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(240), ms(260))}, o3.Subscriptions())
}

// Many synchronous failing sources do not grow the stack: the last is
// subscribed as deep as the second; a nil one is skipped. Negative control:
// recursing from OnError (no wip loop) made the last subscription
// thousands of frames deeper than the second.
func TestOnErrorResumeNextOverManySynchronousSourcesDoesNotGrowTheStack(t *testing.T) {
	srcs := make([]rx.Observable[int], 10_000)
	depth := make([]int, len(srcs))
	for i := range srcs {
		srcs[i] = rx.Defer(func() rx.Observable[int] {
			depth[i] = stackDepth()
			return rx.Concat(rx.Return(i), rx.Throw[int](rxtest.ErrTest))
		})
	}
	srcs[5] = nil
	vs, err := collect(t, rx.OnErrorResumeNext(srcs...))
	require.NoError(t, err)
	assert.Len(t, vs, len(srcs)-1)
	assert.Equal(t, depth[1], depth[len(srcs)-1], "the last source is subscribed as deep as the second")
}
