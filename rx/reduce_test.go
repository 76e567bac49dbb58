package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET AggregateTest's seeded cases (its vector shape; expectations
// derived here).
func TestReduceEmitsTheFoldAtCompletionAndTheSeedForAnEmptySource(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 0), rxtest.Next(ms(220), 1),
		rxtest.Next(ms(230), 2), rxtest.Next(ms(240), 3), rxtest.Next(ms(250), 4), rxtest.Completed[int](ms(260)))
	sum := func(a, v int) int { return a + v }
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Reduce[int](xs, 42, sum) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(260), 42+0+1+2+3+4), rxtest.Completed[int](ms(260))}, res.Events())

	vs, err := collect(t, rx.Reduce(rx.Empty[int](), 42, sum))
	require.NoError(t, err)
	assert.Equal(t, []int{42}, vs)
}

func TestReducePassesAnErrorOnWithoutAResult(t *testing.T) {
	vs, err := collect(t, rx.Reduce(rx.Concat(rx.Of(1), rx.Throw[int](rxtest.ErrTest)), 0, func(a, v int) int { return a + v }))
	assert.Empty(t, vs)
	assert.ErrorIs(t, err, rxtest.ErrTest)
}

func TestReduceCanBuildADifferentType(t *testing.T) {
	vs, err := collect(t, rx.Reduce(rx.Of("a", "b"), []string{"x"}, func(a []string, v string) []string { return append(a, v) }))
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"x", "a", "b"}}, vs)
}
