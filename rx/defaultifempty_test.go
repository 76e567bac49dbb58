package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestDefaultIfEmptyEmitsTheDefaultOnlyForAnEmptySource(t *testing.T) {
	vs, err := collect(t, rx.DefaultIfEmpty(rx.Empty[int](), 7))
	require.NoError(t, err)
	assert.Equal(t, []int{7}, vs)
	vs, err = collect(t, rx.DefaultIfEmpty(rx.Of(1, 2), 7))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, vs)
	vs, err = collect(t, rx.DefaultIfEmpty(rx.Throw[int](rxtest.ErrTest), 7))
	assert.Empty(t, vs, "an error is not emptiness")
	assert.ErrorIs(t, err, rxtest.ErrTest)
}
