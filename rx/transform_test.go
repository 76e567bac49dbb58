package rx_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestTransformsComposeAndKeepTheGrammar(t *testing.T) {
	src := rx.Scan(rx.DistinctUntilChanged(rx.Of(1, 1, 2, 2, 3, 1)), 0, func(acc, v int) int { return acc + v })
	var seen []int
	rec := rxtest.Record(nil, rx.Do(src, func(v int) { seen = append(seen, v) }))
	assert.Equal(t, []int{1, 3, 6, 7}, rec.Values())
	assert.Equal(t, rec.Values(), seen)
	require.NoError(t, rec.GrammarErr())
	assert.True(t, errors.Is(rxtest.Record(nil, rx.Map(rx.Throw[int](rxtest.ErrTest), func(v int) int { return v })).Err(), rxtest.ErrTest))
}
