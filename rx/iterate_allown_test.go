package rx_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/rx"
)

// ownShapes are the runs of Maps and Filters that All's own loop runs with
// no check per value when ctx cannot end (allLoopOwn): the shapes of up to
// two stages, each with a loop of its own, and longer runs through the
// run's slots.
func ownShapes() []allChain {
	fn := func(log *[]string, what string, v int) { *log = append(*log, fmt.Sprint(what, " ", v)) }
	m := func(log *[]string, name string, add int) func(int) int {
		return func(v int) int { fn(log, name, v); return v + add }
	}
	k := func(log *[]string, name string, mod int) func(int) bool {
		return func(v int) bool { fn(log, name, v); return v%mod != 0 }
	}
	return []allChain{
		{"none", func(_ *[]string, src rx.Observable[int]) rx.Observable[int] { return src }, true},
		{"Map", func(log *[]string, src rx.Observable[int]) rx.Observable[int] { return rx.Map(src, m(log, "map", 1)) }, true},
		{"Filter", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			return rx.Filter(src, k(log, "filter", 3))
		}, true},
		{"Map-Filter", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			return rx.Filter(rx.Map(src, m(log, "map", 1)), k(log, "filter", 3))
		}, true},
		{"Filter-Map", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			return rx.Map(rx.Filter(src, k(log, "filter", 3)), m(log, "map", 1))
		}, true},
		{"Map-Map", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			return rx.Map(rx.Map(src, m(log, "map", 1)), m(log, "map2", 5))
		}, true},
		{"Map-Filter-Map", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			return rx.Map(rx.Filter(rx.Map(src, m(log, "map", 1)), k(log, "filter", 3)), m(log, "map2", 5))
		}, true},
		{"Filter-Map-Filter", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			return rx.Filter(rx.Map(rx.Filter(src, k(log, "filter", 3)), m(log, "map", 1)), k(log, "filter2", 4))
		}, true},
		{"Map-Filter-Map-Filter", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			s := rx.Filter(rx.Map(src, m(log, "map", 1)), k(log, "filter", 3))
			return rx.Filter(rx.Map(s, m(log, "map2", 5)), k(log, "filter2", 4))
		}, true},
	}
}

// With a ctx that cannot end, All's own loop checks its scope once per
// chunk rather than before and after each function per value (nothing but
// the body's break can end it meanwhile); it must still behave as the loop
// reached through OnNext for every shape it runs, over Range (chunks of
// 64) and Of, with the body breaking or panicking at the first value, at
// the last of a chunk and the first of the next, and at the last value,
// and with a function of the chain panicking: the log of the user
// functions' calls and the body's values would show a value run past a
// break, or one lost. A ctx that can end keeps the checked loop.
// Negative controls, run by hand on fuse_all.go: with allLoopOwn's Map
// loop going on after yield returns false, every Map row's break fails
// (Go's range-over-func check panics: "range function continued
// iteration after function for loop body returned false"); with scopedBy
// always false, AllLoopsWithoutChecks is false for every shape.
func TestAllsOwnLoopRunsEveryShapeAsTheLoopReachedThroughOnNextDoes(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 200
	vals := make([]int, n)
	for i := range vals {
		vals[i] = i
	}
	sources := map[string]func() rx.Observable[int]{
		"Range": func() rx.Observable[int] { return rx.Range(0, n) },
		"Of":    func() rx.Observable[int] { return rx.Of(vals...) },
		"Defer": func() rx.Observable[int] { return rx.Defer(func() rx.Observable[int] { return rx.Range(0, n) }) },
	}
	for _, c := range ownShapes() {
		build := func(src rx.Observable[int]) rx.Observable[int] { return c.build(new([]string), src) }
		assert.True(t, rx.AllLoopsWithoutChecks(context.Background(), build), c.name)
		assert.False(t, rx.AllLoopsWithoutChecks(t.Context(), build), c.name+": a ctx that can end")
		for name, source := range sources {
			for _, end := range []struct {
				how string
				k   int
			}{{"", 0}, {"break", 1}, {"break", 40}, {"break", 41}, {"break", 64}, {"break", 65}, {"panic", 64}, {"break", n}} {
				label := fmt.Sprintf("%s over %s, %s@%d", c.name, name, end.how, end.k)
				fused := rangeLog(func(log *[]string) rx.Observable[int] { return c.build(log, source()) }, end.how, end.k, true)
				reached := rangeLog(func(log *[]string) rx.Observable[int] { return hiddenSrc{c.build(log, source())} }, end.how, end.k, true)
				require.Equal(t, reached, fused, label)
			}
			// A function of the chain panicking mid-chunk: the panic
			// reaches the ranging goroutine, nothing runs after it.
			boom := func(log *[]string) rx.Observable[int] {
				return c.build(log, rx.Map(source(), func(v int) int {
					if v == 70 {
						panic("in map")
					}
					return v
				}))
			}
			fused := rangeLog(boom, "", 0, true)
			reached := rangeLog(func(log *[]string) rx.Observable[int] { return hiddenSrc{boom(log)} }, "", 0, true)
			require.Equal(t, reached, fused, c.name+" over "+name+", a function panicking")
		}
	}
}
