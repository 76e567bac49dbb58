package pgstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Latency's quantile is never below the duration it stands for and at
// most an eighth above it, from microseconds to hours; Sub, Add and its
// JSON keep every count. Negative control: one bucket per power of two
// (the buckets without their eighths) answers up to twice the duration,
// and the upper-bound assertion fails for most of the durations below.
func TestALatencyQuantileIsAtMostAnEighthAboveTheDuration(t *testing.T) {
	for d := time.Microsecond; d < 4*time.Hour; d = d*9/7 + time.Microsecond {
		var r latencyRecorder
		r.observe(d)
		got := r.snapshot().Quantile(0.5)
		assert.GreaterOrEqual(t, got, d.Truncate(time.Microsecond), "%s", d)
		assert.LessOrEqual(t, float64(got), float64(d)*1.125+float64(time.Microsecond), "%s: %s", d, got)
	}

	var a, b latencyRecorder
	for i := range 100 {
		a.observe(time.Duration(i+1) * time.Millisecond) // 1..100 ms
	}
	b.observe(time.Hour * 10) // past the last bucket: counted in it
	before := a.snapshot()
	a.observe(500 * time.Millisecond)
	la := a.snapshot()
	assert.EqualValues(t, 101, la.Count())
	assert.InDelta(t, float64(50*time.Millisecond), float64(before.Quantile(0.5)), float64(50*time.Millisecond)/8)
	assert.InDelta(t, float64(500*time.Millisecond), float64(la.Sub(before).Quantile(1)), float64(500*time.Millisecond)/8)
	assert.EqualValues(t, 1, la.Sub(before).Count(), "Sub leaves what came between")
	both := la.Add(b.snapshot())
	assert.EqualValues(t, 102, both.Count())
	assert.Equal(t, upperEdge(latencyBuckets-1), both.Quantile(1))
	assert.Zero(t, Latency{}.Quantile(0.99), "no durations: zero")

	out, err := json.Marshal(both)
	require.NoError(t, err)
	var back Latency
	require.NoError(t, json.Unmarshal(out, &back))
	assert.Equal(t, both, back)
	assert.Error(t, json.Unmarshal([]byte(`{"counts":1}`), &back))
	tooMany, _ := json.Marshal(make([]int64, latencyBuckets+1))
	assert.Error(t, json.Unmarshal(tooMany, &back), "more buckets than a Latency has")
}
