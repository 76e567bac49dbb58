package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestCountEmitsHowManyValuesTheSourceEmitted(t *testing.T) {
	vs, err := collect(t, rx.Count(rx.Range(0, 1e5)))
	require.NoError(t, err)
	assert.Equal(t, []int{1e5}, vs)
	vs, err = collect(t, rx.Count(rx.Empty[string]()))
	require.NoError(t, err)
	assert.Equal(t, []int{0}, vs)
	_, err = collect(t, rx.Count(rx.Throw[int](rxtest.ErrTest)))
	assert.ErrorIs(t, err, rxtest.ErrTest)
}
