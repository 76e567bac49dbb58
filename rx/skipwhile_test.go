package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
)

func TestSkipWhileForwardsEverythingFromTheFirstValueThatFailsThePredicate(t *testing.T) {
	calls := 0
	vs, err := collect(t, rx.SkipWhile(rx.Of(1, 2, 5, 1, 7), func(v int) bool { calls++; return v < 3 }))
	require.NoError(t, err)
	assert.Equal(t, []int{5, 1, 7}, vs, "1 after 5 passes: the predicate is not asked again")
	assert.Equal(t, 3, calls)
}
