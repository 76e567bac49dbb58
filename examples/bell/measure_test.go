package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThePinnedBellsLocksStayFlatWhileTheOldShapesGrowWithPartitions(t *testing.T) {
	measureOn := func(partitions int) figures {
		t.Helper()
		f, err := runMeasurement(t.Context(), pg.Database(t),
			measureConfig{partitions: partitions, notifications: 10 * partitions, samples: 3}, discard())
		require.NoError(t, err)
		return f
	}
	small, large := measureOn(3), measureOn(9)

	assert.Equal(t, small.PinnedRelationLocks, large.PinnedRelationLocks,
		"a pinned bell reads two schemas however many partitions there are")
	assert.Greater(t, large.OldRelationLocks, small.OldRelationLocks,
		"the old shape locks every partition's tables")
	assert.Less(t, large.PinnedRelationLocks, large.OldRelationLocks)
	for _, f := range []figures{small, large} {
		assert.Positive(t, f.PinnedP50)
		assert.Positive(t, f.LegP50)
		assert.GreaterOrEqual(t, f.PinnedP99, f.PinnedP50)
		assert.GreaterOrEqual(t, f.OldP99, f.OldP50)
	}

	var out bytes.Buffer
	printFigures(&out, large)
	assert.Contains(t, out.String(), "9 partitions, 90 notifications")
	assert.Contains(t, out.String(), "pinned bell")
}

// TestAHugePartitionsValueIsAClearErrorNotAPanic: -measure -partitions
// beyond what a database holds is refused before anything is written.
// Before, 2^62 passed the lower-bound check and made a slice of that many
// users: a panic (makeslice); a value such as 2^40 would ask for 16 TB.
// Negative control (run): without the upper bound the 2^62 case panics.
func TestAHugePartitionsValueIsAClearErrorNotAPanic(t *testing.T) {
	db := pg.Database(t)
	for _, n := range []int{1 << 62, maxGeneratedUsers + 1} {
		_, err := runMeasurement(t.Context(), db, measureConfig{partitions: n, notifications: 1, samples: 1}, discard())
		assert.ErrorContains(t, err, "-partitions must be between 2 and 100000")
	}
}
