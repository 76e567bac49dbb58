package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAPercentileIsTheSmallestSampleThatCoversThatShareOfTheSamples(t *testing.T) {
	t.Parallel()
	var l latencies
	// 1..100 ms, recorded out of order: percentile must not depend on it.
	for i := 100; i >= 1; i-- {
		l.add(time.Duration(i) * time.Millisecond)
	}
	assert.Equal(t, 50*time.Millisecond, l.percentile(50))
	assert.Equal(t, 99*time.Millisecond, l.percentile(99))
	assert.Equal(t, 100*time.Millisecond, l.percentile(100))
	assert.Equal(t, 1*time.Millisecond, l.percentile(0.5))

	// One slow sample in a hundred shows at p100 but not at p99.
	var few latencies
	for range 99 {
		few.add(time.Millisecond)
	}
	few.add(time.Second)
	assert.Equal(t, time.Millisecond, few.percentile(99), "the slowest 1% is above p99")
	assert.Equal(t, time.Second, few.percentile(100))
	few.add(time.Second) // control: two slow samples in 101 reach p99
	assert.Equal(t, time.Second, few.percentile(99))

	assert.Zero(t, latencies{}.percentile(99), "no samples, no percentile")
}
