package rxbench

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/reactivex/rxgo/v2"
	"github.com/samber/ro"
)

// endlessRx is an endless rx source that stops when its context is done.
func endlessRx() rx.Observable[int] {
	return rx.Create(func(ctx context.Context, o rx.Observer[int]) {
		for i := 0; ctx.Err() == nil; i++ {
			o.OnNext(i)
		}
	})
}

// endlessRo is the ro source that Take(1) can stop: ro cannot stop a
// synchronous source from inside Next (see TestRoTakeDoesNotStopASynchronousSource),
// so this one emits from a goroutine and stops on teardown.
func endlessRo() ro.Observable[int] {
	return ro.NewObservable(func(o ro.Observer[int]) ro.Teardown {
		done := make(chan struct{})
		go func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
					o.Next(i)
				}
			}
		}()
		return func() { close(done) }
	})
}

// endlessRxGo is an rxgo source that stops when the Observe context is done.
func endlessRxGo() rxgo.Observable {
	return rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
		for i := 0; rxgo.Of(i).SendContext(ctx, next); i++ {
		}
	}})
}

// firstRxGo takes the first value of obs.Take(1), reads the channel to its
// end and cancels the Observe context, which is what stops the upstream
// producer (rxgo's Take does not).
func firstRxGo(obs rxgo.Observable) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := sumRxGo(obs.Take(1).Observe(rxgo.WithContext(ctx)))
	if err != nil {
		return -1
	}
	return s
}

// BenchmarkB9TakeOneOfEndless: Take(1) over an endless source, per op, and
// the goroutines still running once the benchmark is over (goroutines-after).
func BenchmarkB9TakeOneOfEndless(b *testing.B) {
	run := func(b *testing.B, op func() int) {
		base := runtime.NumGoroutine()
		b.ReportAllocs()
		for b.Loop() {
			sink = op()
		}
		check(b, "first value", sink, 0)
		extra := goroutinesAbove(base)
		b.ReportMetric(float64(extra), "goroutines-after")
		if extra > 0 {
			b.Fatalf("%d goroutines still running %v after the benchmark", extra, leakBudget)
		}
	}
	b.Run("lib=loop", func(b *testing.B) {
		run(b, func() int {
			for i := 0; ; i++ {
				return i
			}
		})
	})
	b.Run("lib=rx/src=Create", func(b *testing.B) {
		src := rx.Take(endlessRx(), 1)
		run(b, func() int {
			o := &sumObserver{}
			src.Subscribe(o)
			s, err := o.result()
			if err != nil {
				return -1
			}
			return s
		})
	})
	b.Run("lib=rx/src=Range", func(b *testing.B) {
		src := rx.Take(rx.Range(0, math.MaxInt), 1)
		run(b, func() int {
			o := &sumObserver{}
			src.Subscribe(o)
			s, err := o.result()
			if err != nil {
				return -1
			}
			return s
		})
	})
	b.Run("lib=ro/src=goroutine", func(b *testing.B) {
		src := ro.Pipe1(endlessRo(), ro.Take[int](1))
		run(b, func() int {
			done := make(chan int, 1)
			src.Subscribe(ro.NewObserver(func(v int) { done <- v }, func(error) { done <- -1 }, nil))
			return <-done
		})
	})
	b.Run("lib=rxgo/src=Defer", func(b *testing.B) {
		src := endlessRxGo()
		run(b, func() int { return firstRxGo(src) })
	})
}
