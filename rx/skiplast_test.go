package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET SkipLastTest (SkipLast_Zero_Completed,
// SkipLast_Some_Completed, SkipLast_All_Completed: its source; expectations
// derived here): each value goes out when n more have arrived, at that
// arrival's time; the last n are dropped. Negative control: emitting the
// newest value instead of the oldest when the ring is full gave 5, 6, ... at
// the same times.
func TestSkipLastReleasesEachValueWhenNMoreHaveArrived(t *testing.T) {
	src := func(clk *rxtest.Clock) *rxtest.TestObservable[int] {
		return rxtest.Hot(clk, rxtest.Next(ms(180), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(250), 3),
			rxtest.Next(ms(270), 4), rxtest.Next(ms(310), 5), rxtest.Next(ms(360), 6), rxtest.Next(ms(380), 7),
			rxtest.Next(ms(410), 8), rxtest.Next(ms(590), 9), rxtest.Completed[int](ms(650)))
	}
	for _, tc := range []struct {
		n    int
		want []rxtest.Event[int]
	}{
		{0, []rxtest.Event[int]{rxtest.Next(ms(210), 2), rxtest.Next(ms(250), 3), rxtest.Next(ms(270), 4),
			rxtest.Next(ms(310), 5), rxtest.Next(ms(360), 6), rxtest.Next(ms(380), 7), rxtest.Next(ms(410), 8),
			rxtest.Next(ms(590), 9), rxtest.Completed[int](ms(650))}},
		{3, []rxtest.Event[int]{rxtest.Next(ms(310), 2), rxtest.Next(ms(360), 3), rxtest.Next(ms(380), 4),
			rxtest.Next(ms(410), 5), rxtest.Next(ms(590), 6), rxtest.Completed[int](ms(650))}},
		{10, []rxtest.Event[int]{rxtest.Completed[int](ms(650))}},
	} {
		clk := rxtest.NewClock()
		xs := src(clk)
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.SkipLast[int](xs, tc.n) })
		assert.Equal(t, tc.want, res.Events(), "n=%d", tc.n)
	}
}

// The ring holds n values and grows only as they arrive: a huge n costs
// nothing up front. Negative control: make([]T, 0, n) panicked (makeslice: cap out of range).
func TestSkipLastHoldsAtMostNValuesAndAllocatesOnlyAsTheyArrive(t *testing.T) {
	vs, err := collect(t, rx.SkipLast(rx.Range(0, 10), 1<<62))
	assert.NoError(t, err)
	assert.Empty(t, vs)
	allocs := testing.AllocsPerRun(5, func() {
		rx.SkipLast(rx.Range(0, 1e5), 2).Subscribe(rx.NewObserver[int](nil, nil, nil))
	})
	assert.Less(t, allocs, 10.0, "a ring of 2 values, not a growing list")
}
