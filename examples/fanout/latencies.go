package main

import (
	"math"
	"slices"
	"time"
)

// latencies are the durations of one kind of operation.
type latencies struct {
	samples []time.Duration
}

func (l *latencies) add(d time.Duration) { l.samples = append(l.samples, d) }

// count returns how many were recorded.
func (l latencies) count() int { return len(l.samples) }

// percentile returns the nearest-rank p-th percentile (0 < p <= 100): the
// smallest sample that at least p% of the samples do not exceed; 0 when
// there are none.
func (l latencies) percentile(p float64) time.Duration {
	if len(l.samples) == 0 {
		return 0
	}
	sorted := slices.Clone(l.samples)
	slices.Sort(sorted)
	rank := int(math.Ceil(float64(len(sorted)) * p / 100))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
