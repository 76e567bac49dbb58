package rx_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// RxJS expand's "should recursively map-and-flatten each item to an
// Observable" in virtual time: 1 doubles through cold inners of 10ms until
// 16. Negative control: f returning Empty at 4 stops the expansion there.
func TestExpandEmitsEachValueAndExpandsItRecursively(t *testing.T) {
	run := func(stopAt int) *rxtest.Recorder[int] {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Completed[int](ms(400)))
		return rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] {
			return rx.Expand[int](xs, func(v int) rx.Observable[int] {
				if v == stopAt {
					return rx.Empty[int]()
				}
				return rxtest.Cold(clk, rxtest.Next(ms(10), 2*v), rxtest.Completed[int](ms(10)))
			})
		})
	}
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(210), 1), rxtest.Next(ms(220), 2), rxtest.Next(ms(230), 4),
		rxtest.Next(ms(240), 8), rxtest.Next(ms(250), 16), rxtest.Completed[int](ms(400))}, run(16).Events())
	assert.Equal(t, []int{1, 2, 4}, run(4).Values(), "control")
}

// A deep synchronous expansion runs from a loop. Negative control: the
// count shows all 1e5 levels ran.
func TestExpandOfADeepSynchronousChainDoesNotGrowTheStack(t *testing.T) {
	const n = 100_000
	vs, err := collect(t, rx.Expand(rx.Return(0), func(v int) rx.Observable[int] {
		if v == n {
			return rx.Empty[int]()
		}
		return rx.Return(v + 1)
	}))
	require.NoError(t, err)
	assert.Len(t, vs, n+1)
}

// An expansion that widens without end fills its bounded queue and fails.
// Negative control: Take cuts the same expansion before the bound.
func TestAnExpansionThatNeverEndsFailsAtQueueLimitUnlessCut(t *testing.T) {
	widen := func(v int) rx.Observable[int] { return rx.Of(v, v) }
	_, err := collect(t, rx.Expand(rx.Return(1), widen))
	var oe *rx.OverflowError
	require.True(t, errors.As(err, &oe), "got %v", err)
	assert.Equal(t, "Expand", oe.Op)

	vs, err := collect(t, rx.Take(rx.Expand(rx.Return(1), widen), 1000))
	require.NoError(t, err, "control")
	assert.Len(t, vs, 1000)
}
