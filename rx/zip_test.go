package rx_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func pair(a int, b string) string { return fmt.Sprint(a, b) }

// After Rx.NET ZipTest's asymmetric cases (vector and expectations derived
// here).
func TestZip2PairsValuesInOrderAndCompletesWhenASideIsSpent(t *testing.T) {
	clk := rxtest.NewClock()
	a := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(220), 2), rxtest.Next(ms(230), 3), rxtest.Completed[int](ms(240)))
	b := rxtest.Hot(clk, rxtest.Next(ms(215), "a"), rxtest.Next(ms(235), "b"), rxtest.Next(ms(260), "c"), rxtest.Next(ms(270), "d"),
		rxtest.Completed[string](ms(300)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[string] { return rx.Zip2[int, string](a, b, pair) })
	assert.Equal(t, []rxtest.Event[string]{rxtest.Next(ms(215), "1a"), rxtest.Next(ms(235), "2b"), rxtest.Next(ms(260), "3c"),
		rxtest.Completed[string](ms(260))}, res.Events(), "a completed at 240 with 3 waiting for its partner")
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(240))}, a.Subscriptions())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(260))}, b.Subscriptions())
}

func TestZip2OfSynchronousSources(t *testing.T) {
	vs, err := collect(t, rx.Zip2(rx.Range(1, 3), rx.Of("a", "b", "c", "d"), pair))
	require.NoError(t, err)
	assert.Equal(t, []string{"1a", "2b", "3c"}, vs)
}

func TestZip2FailsWithTheFirstError(t *testing.T) {
	_, err := collect(t, rx.Zip2(rx.Throw[int](rxtest.ErrTest), rx.Of("a"), pair))
	assert.ErrorIs(t, err, rxtest.ErrTest)
}

func TestZip2BoundsTheValuesWaitingForPartners(t *testing.T) {
	// An endless synchronous side can never be paired in full: Zip2 stops
	// it at its bound instead of holding values until memory runs out.
	vs, err := collect(t, rx.Zip2(rx.Range(0, math.MaxInt), rx.Of("a"), pair))
	assert.Empty(t, vs)
	var oe *rx.OverflowError
	require.True(t, errors.As(err, &oe), "got %v", err)
	assert.Equal(t, rx.ZipLimit, oe.Limit)
}
