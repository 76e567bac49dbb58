package rxbench

import (
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/reactivex/rxgo/v2"
	"github.com/samber/ro"
)

// BenchmarkB4SelectMany: 1e3 outer values, each mapped to a synchronous inner
// Range of 1e2, flattened and summed. lib=*-merge subscribe inners as they
// come (Rx.NET SelectMany); lib=*-concat one after the other (rx.ConcatMap,
// ro.FlatMap and rxgo FlatMap are all concat).
func BenchmarkB4SelectMany(b *testing.B) {
	const outer, inner = 1_000, 100
	const items = outer * inner
	const want = outer * inner * (inner - 1) / 2
	b.Run("lib=loop", func(b *testing.B) {
		perItem(b, items, func() {
			s := 0
			for range outer {
				for j := range inner {
					s += j
				}
			}
			sink = s
		})
		check(b, "sum", sink, want)
	})
	b.Run("lib=rx-merge", func(b *testing.B) {
		src := rx.SelectMany(rx.Range(0, outer), func(int) rx.Observable[int] { return rx.Range(0, inner) })
		var err error
		perItem(b, items, func() {
			o := &sumObserver{}
			src.Subscribe(o)
			sink, err = o.result()
		})
		if err != nil {
			b.Fatal(err)
		}
		check(b, "sum", sink, want)
	})
	b.Run("lib=rx-concat", func(b *testing.B) {
		src := rx.ConcatMap(rx.Range(0, outer), func(int) rx.Observable[int] { return rx.Range(0, inner) })
		var err error
		perItem(b, items, func() {
			o := &sumObserver{}
			src.Subscribe(o)
			sink, err = o.result()
		})
		if err != nil {
			b.Fatal(err)
		}
		check(b, "sum", sink, want)
	})
	roRun := func(b *testing.B, src ro.Observable[int64]) {
		var s int64
		perItem(b, items, func() {
			s = 0
			src.Subscribe(ro.NewObserver(func(v int64) { s += v }, func(error) { s = -1 }, nil))
			sink = int(s)
		})
		check(b, "sum", sink, want)
	}
	b.Run("lib=ro-merge", func(b *testing.B) {
		roRun(b, ro.Pipe1(ro.Range(0, outer), ro.MergeMap(func(int64) ro.Observable[int64] { return ro.Range(0, inner) })))
	})
	b.Run("lib=ro-concat", func(b *testing.B) {
		roRun(b, ro.Pipe1(ro.Range(0, outer), ro.FlatMap(func(int64) ro.Observable[int64] { return ro.Range(0, inner) })))
	})
	b.Run("lib=rxgo-concat", func(b *testing.B) {
		// Built per op: rxgo's FlatMap creates its output channel once, at
		// construction, so a second Observe sends on the channel the first
		// one closed and panics.
		var err error
		perItem(b, items, func() {
			src := rxgo.Range(0, outer).FlatMap(func(rxgo.Item) rxgo.Observable { return rxgo.Range(0, inner) })
			sink, err = observeRxGo(src)
		})
		if err != nil {
			b.Fatal(err)
		}
		check(b, "sum", sink, want)
	})
}
