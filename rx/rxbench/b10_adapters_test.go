package rxbench

import (
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxgoadapt"
	"github.com/reactivex/rxgo/v2"
)

// BenchmarkB10Adapters: 1e5 values across the rxgoadapt adapters, against
// rxgo reading the same range on its own.
func BenchmarkB10Adapters(b *testing.B) {
	const n = 100_000
	const want = n * (n - 1) / 2
	b.Run("lib=rxgo", func(b *testing.B) {
		src := rxgo.Range(0, n)
		var err error
		perItem(b, n, func() { sink, err = observeRxGo(src) })
		if err != nil {
			b.Fatal(err)
		}
		check(b, "sum", sink, want)
	})
	b.Run("lib=FromRxGo", func(b *testing.B) {
		src := rxgoadapt.FromRxGoOf[int](rxgo.Range(0, n))
		var err error
		perItem(b, n, func() {
			// FromRxGo delivers on its own goroutine: wait for the end.
			o := &sumObserver{}
			done := make(chan struct{})
			src.Subscribe(rx.NewObserver(o.OnNext,
				func(e error) { o.OnError(e); close(done) },
				func() { o.OnCompleted(); close(done) }))
			<-done
			sink, err = o.result()
		})
		if err != nil {
			b.Fatal(err)
		}
		check(b, "sum", sink, want)
	})
	b.Run("lib=ToRxGo", func(b *testing.B) {
		src := rxgoadapt.ToRxGo(rx.Range(0, n))
		var err error
		perItem(b, n, func() { sink, err = observeRxGo(src) })
		if err != nil {
			b.Fatal(err)
		}
		check(b, "sum", sink, want)
	})
}
