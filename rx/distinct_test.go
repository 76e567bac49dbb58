package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET DistinctTest's default-comparer cases (a short vector of its
// shape; expectations derived here).
func TestDistinctForwardsEachValueTheFirstTimeOnly(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(280), 4), rxtest.Next(ms(300), 2), rxtest.Next(ms(350), 4),
		rxtest.Next(ms(380), 3), rxtest.Next(ms(400), 2), rxtest.Completed[int](ms(420)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Distinct[int](xs) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(280), 4), rxtest.Next(ms(300), 2),
		rxtest.Next(ms(380), 3), rxtest.Completed[int](ms(420))}, res.Events())
}

func TestDistinctIsNotDistinctUntilChanged(t *testing.T) {
	vs, err := collect(t, rx.Distinct(rx.Of("a", "b", "a")))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, vs)
	vs, err = collect(t, rx.DistinctUntilChanged(rx.Of("a", "b", "a")))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "a"}, vs, "control: only adjacent duplicates are dropped there")
}
