package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
)

func TestStartWithEmitsItsValuesBeforeTheSource(t *testing.T) {
	vs, err := collect(t, rx.StartWith(rx.Of(3, 4), 1, 2))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 4}, vs)
	vs, err = collect(t, rx.Take(rx.StartWith(rx.Never[int](), 1), 1))
	require.NoError(t, err)
	assert.Equal(t, []int{1}, vs)
}
