package rxbench

import (
	"fmt"
	"iter"
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/reactivex/rxgo/v2"
	"github.com/samber/ro"
)

func rangeSeq(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}

func mapSeq(s iter.Seq[int], f func(int) int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for v := range s {
			if !yield(f(v)) {
				return
			}
		}
	}
}

func filterSeq(s iter.Seq[int], keep func(int) bool) iter.Seq[int] {
	return func(yield func(int) bool) {
		for v := range s {
			if keep(v) && !yield(v) {
				return
			}
		}
	}
}

// BenchmarkB1RangeMapFilterSum: Range → Map(x*2) → Filter(x%4==0) → sum.
func BenchmarkB1RangeMapFilterSum(b *testing.B) {
	for _, n := range []int{1e3, 1e6} {
		want := wantB1(n)
		b.Run(fmt.Sprintf("n=%.0e", float64(n)), func(b *testing.B) {
			b.Run("lib=loop", func(b *testing.B) {
				perItem(b, n, func() {
					s := 0
					for x := range n {
						if y := double(x); quarter(y) {
							s += y
						}
					}
					sink = s
				})
				check(b, "sum", sink, want)
			})
			b.Run("lib=loop-funcvals", func(b *testing.B) {
				st := newStages()
				perItem(b, n, func() {
					s := 0
					for x := range n {
						if y := st.f(x); st.keep(y) {
							s += y
						}
					}
					sink = s
				})
				check(b, "sum", sink, want)
			})
			b.Run("lib=iterseq", func(b *testing.B) {
				perItem(b, n, func() {
					s := 0
					for v := range filterSeq(mapSeq(rangeSeq(n), double), quarter) {
						s += v
					}
					sink = s
				})
				check(b, "sum", sink, want)
			})
			b.Run("lib=rx", func(b *testing.B) {
				src := rx.Filter(rx.Map(rx.Range(0, n), double), quarter)
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
				src := ro.Pipe2(ro.Range(0, int64(n)), ro.Map(double64), ro.Filter(quarter64))
				var s int64
				perItem(b, n, func() {
					s = 0
					src.Subscribe(ro.NewObserver(func(v int64) { s += v }, func(error) { s = -1 }, nil))
					sink = int(s)
				})
				check(b, "sum", sink, want)
			})
			b.Run("lib=rxgo", func(b *testing.B) {
				src := rxgo.Range(0, n).Map(rxgoDbl).Filter(rxgoQtr)
				var err error
				perItem(b, n, func() { sink, err = observeRxGo(src) })
				if err != nil {
					b.Fatal(err)
				}
				check(b, "sum", sink, want)
			})
			b.Run("lib=rxgo-buf1024", func(b *testing.B) {
				buf := rxgo.WithBufferedChannel(1024)
				src := rxgo.Range(0, n, buf).Map(rxgoDbl, buf).Filter(rxgoQtr, buf)
				var err error
				perItem(b, n, func() { sink, err = observeRxGo(src, buf) })
				if err != nil {
					b.Fatal(err)
				}
				check(b, "sum", sink, want)
			})
		})
	}
}
