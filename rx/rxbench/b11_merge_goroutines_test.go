package rxbench

import (
	"context"
	"sync"
	"testing"

	"github.com/meshrx/meshrx/rx"
)

// BenchmarkB11MergeTwoGoroutineProducers: two producers, each on its own
// goroutine, emit 1e5 values apiece into one Merge whose consumer sums them;
// an item is one value delivered. lib=chan is the Go baseline: the same two
// goroutines sending on one unbuffered channel that a loop sums. In rx the
// producers deliver through Merge's bounded mailbox: one delivers while the
// other queues (at most 32 values) or waits.
func BenchmarkB11MergeTwoGoroutineProducers(b *testing.B) {
	const each = 100_000
	const items = 2 * each
	const want = 2 * each * (each - 1) / 2
	b.Run("lib=chan", func(b *testing.B) {
		perItem(b, items, func() {
			ch := make(chan int)
			var wg sync.WaitGroup
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						ch <- i
					}
				}()
			}
			go func() { wg.Wait(); close(ch) }()
			s := 0
			for v := range ch {
				s += v
			}
			sink = s
		})
		check(b, "sum", sink, want)
	})
	b.Run("lib=rx", func(b *testing.B) {
		producer := rx.Create(func(ctx context.Context, o rx.Observer[int]) {
			go func() {
				for i := 0; i < each && ctx.Err() == nil; i++ {
					o.OnNext(i)
				}
				o.OnCompleted()
			}()
		})
		src := rx.Merge(producer, producer)
		perItem(b, items, func() {
			o := &doneObserver{done: make(chan struct{})}
			src.Subscribe(o)
			<-o.done
			sink = o.sum
		})
		check(b, "sum", sink, want)
	})
}

// doneObserver sums values and signals the end, for sources that finish on
// another goroutine.
type doneObserver struct {
	sum  int
	done chan struct{}
}

func (o *doneObserver) OnNext(v int)  { o.sum += v }
func (o *doneObserver) OnError(error) { close(o.done) }
func (o *doneObserver) OnCompleted()  { close(o.done) }
