package rx_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET BufferTest's count cases (hot source shape and times; the
// expectations derived here).
func TestBufferCountEmitsFullSlicesAndThePartialOneAtCompletion(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(220), 3),
		rxtest.Next(ms(230), 4), rxtest.Next(ms(240), 5), rxtest.Completed[int](ms(250)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[]int] { return rx.BufferCount[int](xs, 3) })
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Next(ms(230), []int{2, 3, 4}),
		rxtest.Next(ms(250), []int{5}), rxtest.Completed[[]int](ms(250))}, res.Events())
	vs, err := collect(t, rx.BufferCount(rx.Range(0, 4), 2))
	require.NoError(t, err)
	assert.Equal(t, [][]int{{0, 1}, {2, 3}}, vs, "no empty slice at completion")
}

func TestBufferCountSlicesAreTheReceiversToKeep(t *testing.T) {
	vs, err := collect(t, rx.BufferCount(rx.Range(0, 6), 2))
	require.NoError(t, err)
	vs[0][0] = 99
	assert.Equal(t, [][]int{{99, 1}, {2, 3}, {4, 5}}, vs)
}

func TestBufferCountOfZeroFailsWithAnArgumentError(t *testing.T) {
	_, err := collect(t, rx.BufferCount(rx.Of(1), 0))
	var ae *rx.ArgumentError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, "BufferCount", ae.Op)
	assert.Contains(t, err.Error(), "n = 0")
}

func TestBufferCountDropsItsValuesOnError(t *testing.T) {
	vs, err := collect(t, rx.BufferCount(rx.Concat(rx.Of(1), rx.Throw[int](rxtest.ErrTest)), 2))
	assert.Empty(t, vs)
	assert.ErrorIs(t, err, rxtest.ErrTest)
}
