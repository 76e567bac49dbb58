package rx_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestTakeWhileOverAnEndlessRangeTerminates(t *testing.T) {
	vs, err := rx.Collect(context.Background(), rx.TakeWhile(rx.Range(0, math.MaxInt), func(v int) bool { return v < 4 }))
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2, 3}, vs)
}

func TestTakeWhileUnsubscribesItsSourceAtTheFirstFailingValue(t *testing.T) {
	values := make([]int, 1000)
	for i := range values {
		values[i] = i
	}
	below3 := func(v int) bool { return v < 3 }
	run := func(takeWhile func(rx.Observable[int], func(int) bool) rx.Observable[int]) (int64, bool, []int) {
		var p probe
		vs, err := collect(t, takeWhile(p.of(values...), below3))
		require.NoError(t, err)
		return p.emitted.Load(), p.unsubscribed(), vs
	}
	emitted, unsubscribed, vs := run(rx.TakeWhile[int])
	assert.Equal(t, []int{0, 1, 2}, vs)
	assert.EqualValues(t, 4, emitted, "the source stops at the value that ended the stream")
	assert.True(t, unsubscribed)

	t.Run("negative control: a TakeWhile that only stops forwarding lets the source run on", func(t *testing.T) {
		filtering := func(src rx.Observable[int], keep func(int) bool) rx.Observable[int] {
			open := true
			return rx.Filter(src, func(v int) bool { open = open && keep(v); return open })
		}
		emitted, _, vs := run(filtering)
		assert.Equal(t, []int{0, 1, 2}, vs)
		assert.EqualValues(t, 1000, emitted)
	})
}

// After Rx.NET TakeWhileTest.TakeWhile_Complete_After (its hot source,
// shortened; the prime predicate is its own).
func TestTakeWhileCompletesAtTheFirstFailingValueOfAHotSource(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk,
		rxtest.Next(ms(90), -1), rxtest.Next(ms(110), -1), rxtest.Next(ms(210), 2),
		rxtest.Next(ms(260), 5), rxtest.Next(ms(290), 13), rxtest.Next(ms(320), 3),
		rxtest.Next(ms(350), 7), rxtest.Next(ms(390), 4), rxtest.Completed[int](ms(600)))
	isPrime := func(n int) bool {
		if n < 2 {
			return false
		}
		for d := 2; d*d <= n; d++ {
			if n%d == 0 {
				return false
			}
		}
		return true
	}
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.TakeWhile[int](xs, isPrime) })
	assert.Equal(t, []rxtest.Event[int]{
		rxtest.Next(ms(210), 2), rxtest.Next(ms(260), 5), rxtest.Next(ms(290), 13),
		rxtest.Next(ms(320), 3), rxtest.Next(ms(350), 7), rxtest.Completed[int](ms(390)),
	}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(390))}, xs.Subscriptions())
}

func TestTakeWhilePassesAnErrorOn(t *testing.T) {
	_, err := collect(t, rx.TakeWhile(rx.Concat(rx.Of(1), rx.Throw[int](rxtest.ErrTest)), func(int) bool { return true }))
	assert.ErrorIs(t, err, rxtest.ErrTest)
}
