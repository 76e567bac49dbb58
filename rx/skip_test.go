package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET SkipTest.Skip_Complete_After (its hot source, shortened;
// ticks read as milliseconds).
func TestSkipDropsTheFirstNValuesOfAHotSource(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk,
		rxtest.Next(ms(70), 6), rxtest.Next(ms(150), 4), rxtest.Next(ms(210), 9),
		rxtest.Next(ms(230), 13), rxtest.Next(ms(270), 7), rxtest.Next(ms(280), 1),
		rxtest.Next(ms(300), -1), rxtest.Next(ms(310), 3), rxtest.Completed[int](ms(690)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Skip[int](xs, 3) })
	assert.Equal(t, []rxtest.Event[int]{
		rxtest.Next(ms(280), 1), rxtest.Next(ms(300), -1),
		rxtest.Next(ms(310), 3), rxtest.Completed[int](ms(690)),
	}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(690))}, xs.Subscriptions())
}

func TestSkipOfZeroOrLessForwardsEverything(t *testing.T) {
	vs, err := collect(t, rx.Skip(rx.Of(1, 2), -1))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, vs)
}

func TestSkipPassesAnErrorOnEvenWhileSkipping(t *testing.T) {
	_, err := collect(t, rx.Skip(rx.Concat(rx.Of(1), rx.Throw[int](rxtest.ErrTest)), 5))
	assert.ErrorIs(t, err, rxtest.ErrTest)
}
