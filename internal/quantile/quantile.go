// Package quantile computes nearest-rank quantiles of latency samples, the
// one definition the load programs and scale benchmarks report p50 and p99
// with.
//
// The q-quantile of n samples is the sample of rank ceil(q×n) in ascending
// order (rank 1 for q×n below 1): a value that was measured, never an
// interpolation, and at least a fraction q of the samples are at or below it.
package quantile

import (
	"math"
	"slices"
	"time"
)

// Of returns the q-quantile (0 ≤ q ≤ 1) of ds, which it does not modify or
// need sorted; 0 when ds is empty.
func Of(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return Sorted(s, q)
}

// Sorted returns the q-quantile (0 ≤ q ≤ 1) of sorted, which must be in
// ascending order; 0 when it is empty. A q outside [0, 1] is clamped.
func Sorted(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// The small tolerance keeps 0.99×100 at rank 99 despite floating point.
	rank := int(math.Ceil(q*float64(len(sorted)) - 1e-9))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
