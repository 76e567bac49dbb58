package rxbench

import (
	"context"
	"testing"

	"github.com/meshrx/meshrx/rx"
)

// goProducer emits 0..n-1 from a goroutine it starts per subscription, and
// completes; it stops when the subscriber unsubscribes.
func goProducer(n int) rx.Observable[int] {
	return rx.Create(func(ctx context.Context, o rx.Observer[int]) {
		go func() {
			for i := 0; i < n && ctx.Err() == nil; i++ {
				o.OnNext(i)
			}
			o.OnCompleted()
		}()
	})
}

// sumAll ranges over src with rx.All and sums the values.
func sumAll(b *testing.B, src rx.Observable[int]) int {
	s := 0
	for v, err := range rx.All(context.Background(), src) {
		if err != nil {
			b.Fatal(err)
		}
		s += v
	}
	return s
}

// BenchmarkB15RangeAll: `for v := range rx.All(ctx, Map(Range(0, n), inc))`
// beside the loop through a function value doing the same work (over a
// synchronous source the body runs inside the source's loop), and over a
// goroutine producer (each value is handed over to the ranging goroutine)
// beside a loop receiving from an unbuffered channel fed by a goroutine.
func BenchmarkB15RangeAll(b *testing.B) {
	st := newFns()
	b.Run("source=sync", func(b *testing.B) {
		const n = b14N
		want := n*(n-1)/2 + n
		b.Run("lib=loop", func(b *testing.B) {
			perItem(b, n, func() {
				s := 0
				for x := range n {
					s += st.g(x)
				}
				sink = s
			})
			check(b, "sum", sink, want)
		})
		b.Run("lib=rx", func(b *testing.B) {
			src := rx.Map(rx.Range(0, n), st.g)
			perItem(b, n, func() { sink = sumAll(b, src) })
			check(b, "sum", sink, want)
		})
	})
	b.Run("source=goroutine", func(b *testing.B) {
		const n = b14N / 10
		want := n*(n-1)/2 + n
		b.Run("lib=chan", func(b *testing.B) {
			perItem(b, n, func() {
				ch := make(chan int)
				go func() {
					for i := range n {
						ch <- i
					}
					close(ch)
				}()
				s := 0
				for v := range ch {
					s += st.g(v)
				}
				sink = s
			})
			check(b, "sum", sink, want)
		})
		b.Run("lib=rx", func(b *testing.B) {
			src := rx.Map(goProducer(n), st.g)
			perItem(b, n, func() { sink = sumAll(b, src) })
			check(b, "sum", sink, want)
		})
	})
}
