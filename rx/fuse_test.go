package rx_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

type sum struct{ n, s int }

func (o *sum) OnNext(v int)  { o.n++; o.s += v }
func (o *sum) OnError(error) {}
func (o *sum) OnCompleted()  {}

func TestTheSynchronousPathAllocatesNothingPerValue(t *testing.T) {
	double := func(x int) int { return 2 * x }
	quarter := func(x int) bool { return x%4 == 0 }
	allocs := func(n int) float64 {
		src := rx.Filter(rx.Map(rx.Range(0, n), double), quarter)
		return testing.AllocsPerRun(20, func() { src.Subscribe(&sum{}) })
	}
	small, large := allocs(10), allocs(100_000)
	assert.Equal(t, small, large, "allocations per subscription do not grow with the values")
	// Control: a stage that does allocate per value is seen by the same measure.
	boxed := func(n int) float64 {
		src := rx.Map(rx.Range(0, n), func(x int) int { p := new(int); *p = x; sinkPtr = p; return x })
		return testing.AllocsPerRun(5, func() { src.Subscribe(&sum{}) })
	}
	assert.Greater(t, boxed(1000), boxed(10))
}

var sinkPtr *int

func TestAFusedRangeStillStopsWhenTheChainBelowUnsubscribes(t *testing.T) {
	rec := rxtest.Record(nil, rx.Take(rx.Filter(rx.Map(rx.Range(0, math.MaxInt), func(x int) int { return x + 1 }), func(x int) bool { return x%2 == 0 }), 3))
	assert.Equal(t, []int{2, 4, 6}, rec.Values())
	assert.True(t, rec.Completed())
	rec = rxtest.Record(nil, rx.Take(rx.Filter(rx.Range(0, math.MaxInt), func(x int) bool { return x%3 == 0 }), 2))
	assert.Equal(t, []int{0, 3}, rec.Values())
	assert.Equal(t, []string{"a", "b"}, rxtest.Record(nil, rx.Take(rx.Map(rx.Range(0, math.MaxInt), func(x int) string { return string(rune('a' + x)) }), 2)).Values())
}
