package rxbench

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/reactivex/rxgo/v2"
	"github.com/samber/ro"
)

// BenchmarkB6SubjectFanOut: subscribe k observers to a subject, push 1e5
// values, complete. An item is one delivery (a value to one observer), so
// ns/item compares across k.
func BenchmarkB6SubjectFanOut(b *testing.B) {
	const n = 100_000
	const wantEach = n * (n - 1) / 2
	for _, k := range []int{1, 10, 100} {
		items := n * k
		b.Run(fmt.Sprintf("observers=%d", k), func(b *testing.B) {
			b.Run("lib=loop", func(b *testing.B) {
				perItem(b, items, func() {
					obs := make([]rx.Observer[int], k)
					sums := make([]*sumObserver, k)
					for j := range obs {
						sums[j] = &sumObserver{}
						obs[j] = sums[j]
					}
					for v := range n {
						for _, o := range obs {
							o.OnNext(v)
						}
					}
					sink = sums[k-1].sum
				})
				check(b, "sum", sink, wantEach)
			})
			b.Run("lib=rx", func(b *testing.B) {
				perItem(b, items, func() {
					s := rx.NewSubject[int]()
					sums := make([]*sumObserver, k)
					for j := range sums {
						sums[j] = &sumObserver{}
						s.Subscribe(sums[j])
					}
					for v := range n {
						s.OnNext(v)
					}
					s.OnCompleted()
					sink, _ = sums[k-1].result()
				})
				check(b, "sum", sink, wantEach)
			})
			b.Run("lib=ro", func(b *testing.B) {
				perItem(b, items, func() {
					s := ro.NewPublishSubject[int]()
					sums := make([]int, k)
					for j := range sums {
						s.Subscribe(ro.NewObserver(func(v int) { sums[j] += v }, nil, nil))
					}
					for v := range n {
						s.Next(v)
					}
					s.Complete()
					sink = sums[k-1]
				})
				check(b, "sum", sink, wantEach)
			})
			b.Run("lib=rxgo-connectable", func(b *testing.B) {
				perItem(b, items, func() { sink = rxgoFanOut(n, k) })
				check(b, "sum", sink, wantEach)
			})
		})
	}
}

// rxgoFanOut is the rxgo counterpart: a connectable FromChannel with k
// observers, each read by its own goroutine (rxgo delivers on channels).
func rxgoFanOut(n, k int) int {
	src := make(chan rxgo.Item)
	obs := rxgo.FromChannel(src, rxgo.WithPublishStrategy())
	sums := make([]int, k)
	var wg sync.WaitGroup
	for j := range k {
		items := obs.Observe()
		wg.Go(func() {
			s, _ := sumRxGo(items)
			sums[j] = s
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs.Connect(ctx)
	for v := range n {
		src <- rxgo.Of(v)
	}
	close(src)
	wg.Wait()
	return sums[k-1]
}
