package rxbench

import (
	"runtime"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
	"github.com/samber/ro"
)

const b5Items = 1_000_000

// timeoutPair runs plain and bounded (the same pipeline under Timeout) once
// per op. Only bounded is timed by the benchmark (ns/item); plain runs with
// the timer stopped, right before, and overhead-ns/item is the difference
// between the two, measured op by op on the same machine state.
func timeoutPair(b *testing.B, plain, bounded func() int) {
	b.Helper()
	base := runtime.NumGoroutine()
	want := b5Items * (b5Items - 1) / 2
	b.ReportAllocs()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	var plainTotal, boundedTotal time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		t0 := time.Now()
		check(b, "plain sum", plain(), want)
		plainTotal += time.Since(t0)
		b.StartTimer()
		t1 := time.Now()
		sink = bounded()
		boundedTotal += time.Since(t1)
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	check(b, "bounded sum", sink, want)
	reportPerItem(b, b.Elapsed(), b.N, b5Items, m1.Mallocs-m0.Mallocs)
	b.ReportMetric(float64((boundedTotal-plainTotal).Nanoseconds())/float64(b.N)/b5Items, "overhead-ns/item")
	requireNoLeak(b, base)
}

func rxSum(src rx.Observable[int]) func() int {
	return func() int {
		o := &sumObserver{}
		src.Subscribe(o)
		s, err := o.result()
		if err != nil {
			return -1
		}
		return s
	}
}

func roSum(src ro.Observable[int64]) func() int {
	return func() int {
		var s int64
		src.Subscribe(ro.NewObserver(func(v int64) { s += v }, func(error) { s = -1 }, nil))
		return int(s)
	}
}

// BenchmarkB5TimeoutOverhead: Range(1e6) summed, with and without a Timeout
// of an hour that never fires.
func BenchmarkB5TimeoutOverhead(b *testing.B) {
	plainRx := rxSum(rx.Range(0, b5Items))
	b.Run("lib=loop", func(b *testing.B) {
		perItem(b, b5Items, func() {
			s := 0
			for x := range b5Items {
				s += x
			}
			sink = s
		})
	})
	b.Run("lib=rx/clock=real", func(b *testing.B) {
		timeoutPair(b, plainRx, rxSum(rx.Timeout(rx.Range(0, b5Items), time.Hour, clock.New())))
	})
	b.Run("lib=rx/clock=rxtest", func(b *testing.B) {
		timeoutPair(b, plainRx, rxSum(rx.Timeout(rx.Range(0, b5Items), time.Hour, rxtest.NewClock())))
	})
	b.Run("lib=ro/clock=real", func(b *testing.B) {
		timeoutPair(b, roSum(ro.Range(0, b5Items)), roSum(ro.Pipe1(ro.Range(0, b5Items), ro.Timeout[int64](time.Hour))))
	})
}

var (
	timeSink     time.Time
	durationSink time.Duration
)

// BenchmarkB5ClockRead: one clock read, the floor of a Timeout that records
// when each value passed.
func BenchmarkB5ClockRead(b *testing.B) {
	b.Run("read=time.Now", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			timeSink = time.Now()
		}
	})
	b.Run("read=time.Since", func(b *testing.B) {
		t0 := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			durationSink = time.Since(t0)
		}
	})
	b.Run("read=clock.New().Now", func(b *testing.B) {
		var clk clock.Clock = clock.New()
		b.ReportAllocs()
		for b.Loop() {
			timeSink = clk.Now()
		}
	})
	b.Run("read=rxtest.Clock.Now", func(b *testing.B) {
		var clk clock.Clock = rxtest.NewClock()
		b.ReportAllocs()
		for b.Loop() {
			timeSink = clk.Now()
		}
	})
}
