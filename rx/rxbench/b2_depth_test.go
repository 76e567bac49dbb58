package rxbench

import (
	"context"
	"fmt"
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/reactivex/rxgo/v2"
	"github.com/samber/ro"
)

func inc(x int) int                                 { return x + 1 }
func inc64(x int64) int64                           { return x + 1 }
func rxgoInc(_ context.Context, v any) (any, error) { return v.(int) + 1, nil }

// BenchmarkB2MapDepth: k Map stages (x+1 each) over 1e5 values, summed.
func BenchmarkB2MapDepth(b *testing.B) {
	const n = 100_000
	for _, k := range []int{1, 4, 16} {
		want := n*(n-1)/2 + n*k
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			b.Run("lib=loop", func(b *testing.B) {
				perItem(b, n, func() {
					s := 0
					for x := range n {
						for range k {
							x = inc(x)
						}
						s += x
					}
					sink = s
				})
				check(b, "sum", sink, want)
			})
			b.Run("lib=rx", func(b *testing.B) {
				src := rx.Range(0, n)
				for range k {
					src = rx.Map(src, inc)
				}
				var err error
				perItem(b, n, func() {
					o := &sumObserver{}
					src.Subscribe(o)
					sink, err = o.result()
				})
				if err != nil {
					b.Fatal(err)
				}
				check(b, "sum", sink, want)
			})
			b.Run("lib=ro", func(b *testing.B) {
				src := ro.Range(0, n)
				for range k {
					src = ro.Map(inc64)(src)
				}
				var s int64
				perItem(b, n, func() {
					s = 0
					src.Subscribe(ro.NewObserver(func(v int64) { s += v }, func(error) { s = -1 }, nil))
					sink = int(s)
				})
				check(b, "sum", sink, want)
			})
			b.Run("lib=rxgo", func(b *testing.B) {
				src := rxgo.Range(0, n)
				for range k {
					src = src.Map(rxgoInc)
				}
				var err error
				perItem(b, n, func() { sink, err = observeRxGo(src) })
				if err != nil {
					b.Fatal(err)
				}
				check(b, "sum", sink, want)
			})
		})
	}
}
