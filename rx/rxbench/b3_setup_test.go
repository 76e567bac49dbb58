package rxbench

import (
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/reactivex/rxgo/v2"
	"github.com/samber/ro"
)

// BenchmarkB3SubscriptionSetup: build Return(1) → Map, subscribe, run to
// completion, once per op. One value per op, so ns/item is the setup cost.
func BenchmarkB3SubscriptionSetup(b *testing.B) {
	b.Run("lib=loop", func(b *testing.B) {
		perItem(b, 1, func() { sink = inc(sink) & 1 })
	})
	b.Run("lib=rx", func(b *testing.B) {
		var err error
		perItem(b, 1, func() {
			o := &sumObserver{}
			rx.Map(rx.Return(1), inc).Subscribe(o)
			sink, err = o.result()
		})
		if err != nil {
			b.Fatal(err)
		}
		check(b, "value", sink, 2)
	})
	b.Run("lib=ro", func(b *testing.B) {
		perItem(b, 1, func() {
			ro.Pipe1(ro.Just(int64(1)), ro.Map(inc64)).Subscribe(ro.NewObserver(func(v int64) { sink = int(v) }, func(error) { sink = -1 }, nil))
		})
		check(b, "value", sink, 2)
	})
	b.Run("lib=rxgo", func(b *testing.B) {
		var err error
		perItem(b, 1, func() { sink, err = observeRxGo(rxgo.Just(1)().Map(rxgoInc)) })
		if err != nil {
			b.Fatal(err)
		}
		check(b, "value", sink, 2)
	})
}
