package rx_test

import (
	"slices"
	"testing"

	"github.com/meshrx/meshrx/rx"
)

// TestCuttingAChainIntoRunsAddsNoAllocationPerSubscription: the allocations
// of one subscription over 100 values (AllocsPerRun(50)) for each chain and
// synchronous source, bounded by what main allocated before the chains were
// cut into runs (8872fbd, measured with this table). Negative control: at
// 2e4fba6, where compose always laid a first pair out as an mfRun, rxStage
// made DistinctUntilChanged's fresh closure and cut allocated its spans,
// this test fails: Range Map→Filter 12 > 10, Map→Filter→Map→Filter 15 > 14,
// DistinctUntilChanged 11 > 8, FromSeq 12, 15, 11, Subject 20, 25, 18.
func TestCuttingAChainIntoRunsAddsNoAllocationPerSubscription(t *testing.T) {
	vals := make([]int, 100)
	for i := range vals {
		vals[i] = i
	}
	double := func(x int) int { return 2 * x }
	even := func(x int) bool { return x%2 == 0 }
	type bound struct{ rng, of, seq, subject float64 }
	chains := []struct {
		name  string
		chain func(rx.Observable[int]) rx.Observable[int]
		max   bound // 8872fbd's figures
	}{
		{"Map→Filter", func(s rx.Observable[int]) rx.Observable[int] { return rx.Filter(rx.Map(s, double), even) }, bound{10, 9, 10, 18}},
		{"Map→Filter→Map→Filter", func(s rx.Observable[int]) rx.Observable[int] {
			return rx.Filter(rx.Map(rx.Filter(rx.Map(s, double), even), double), even)
		}, bound{14, 13, 14, 24}},
		{"DistinctUntilChanged", func(s rx.Observable[int]) rx.Observable[int] { return rx.DistinctUntilChanged(s) }, bound{8, 8, 9, 16}},
		{"SkipWhile→Map", func(s rx.Observable[int]) rx.Observable[int] {
			return rx.Map(rx.SkipWhile(s, func(x int) bool { return x < 3 }), double)
		}, bound{11, 11, 12, 20}},
	}
	for _, c := range chains {
		r, o, f := c.chain(rx.Range(0, 100)), c.chain(rx.Of(vals...)), c.chain(rx.FromSeq(slices.Values(vals)))
		got := bound{
			rng: testing.AllocsPerRun(50, func() { r.Subscribe(&sum{}) }),
			of:  testing.AllocsPerRun(50, func() { o.Subscribe(&sum{}) }),
			seq: testing.AllocsPerRun(50, func() { f.Subscribe(&sum{}) }),
			subject: testing.AllocsPerRun(50, func() {
				s := rx.NewSubject[int]()
				sub := c.chain(s).Subscribe(&sum{})
				for _, v := range vals {
					s.OnNext(v)
				}
				sub.Unsubscribe()
			}),
		}
		if got.rng > c.max.rng || got.of > c.max.of || got.seq > c.max.seq || got.subject > c.max.subject {
			t.Errorf("%s: allocations per subscription (Range, Of, FromSeq, Subject) %v, at most %v", c.name, got, c.max)
		}
	}
}
