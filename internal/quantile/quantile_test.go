package quantile_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/internal/quantile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// shuffled returns 1..n milliseconds in a fixed random order.
func shuffled(n int) []time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = time.Duration(i+1) * time.Millisecond
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
	return ds
}

func TestTheQuantileIsTheSampleOfNearestRank(t *testing.T) {
	ds := shuffled(200)
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{
		{0, 1 * time.Millisecond},      // rank 1, never index -1
		{0.5, 100 * time.Millisecond},  // ceil(100) = 100
		{0.99, 198 * time.Millisecond}, // ceil(198) = 198, despite 0.99×200 in floating point
		{0.999, 200 * time.Millisecond},
		{1, 200 * time.Millisecond},
		{2, 200 * time.Millisecond}, // clamped, never out of range
	} {
		if got := quantile.Of(ds, c.q); got != c.want {
			t.Errorf("Of(1..200 ms, %v) = %v, want %v", c.q, got, c.want)
		}
	}
	// Negative control: the unsorted input's own element at that index is
	// not the answer, so the test would fail if Of did not sort.
	if ds[99] == 100*time.Millisecond {
		t.Fatal("the shuffle left the median in place: the test cannot tell a sort from none")
	}
}

func TestOfLeavesItsInputInItsOrder(t *testing.T) {
	ds := shuffled(50)
	before := append([]time.Duration(nil), ds...)
	_ = quantile.Of(ds, 0.9)
	for i := range ds {
		if ds[i] != before[i] {
			t.Fatalf("Of reordered its input at %d: %v, was %v", i, ds[i], before[i])
		}
	}
}

func TestNoSamplesHaveAZeroQuantile(t *testing.T) {
	if got := quantile.Of(nil, 0.99); got != 0 {
		t.Errorf("Of(nil) = %v, want 0", got)
	}
	if got := quantile.Sorted(nil, 0.5); got != 0 {
		t.Errorf("Sorted(nil) = %v, want 0", got)
	}
	// Negative control: one sample is its own every quantile, not 0.
	if got := quantile.Of([]time.Duration{7}, 0.5); got != 7 {
		t.Errorf("Of([7]) = %v, want 7", got)
	}
}

// The nearest-rank cases examples/loadtest asserted of its own copy.
func TestWithFewerSamplesThanItsRankP99IsTheSlowest(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for _, c := range []struct {
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{d, 0.500, 50}, {d, 0.990, 99}, {d, 0.999, 100}, {d[:1], 0.990, 1},
		// Fewer samples than 1/(1-q): p99 is the maximum, the slowest
		// sample is never rounded away (a floor index would give 9).
		{d[:10], 0.990, 10},
	} {
		if got := quantile.Sorted(c.sorted, c.q); got != c.want {
			t.Errorf("Sorted(1..%d, %v) = %v, want %v", len(c.sorted), c.q, got, c.want)
		}
	}
}
