package rxbench

import (
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sink keeps benchmark results alive so the compiler cannot drop the work.
var sink int

// leakBudget bounds the wait for goroutines a benchmark started to return.
const leakBudget = 5 * time.Second

// perItem runs op in a b.Loop and reports ns/item and allocs/item for items
// values per op, then fails the benchmark if goroutines outlive it.
func perItem(b *testing.B, items int, op func()) {
	b.Helper()
	base := runtime.NumGoroutine()
	b.ReportAllocs()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	ops := 0
	for b.Loop() {
		op()
		ops++
	}
	runtime.ReadMemStats(&m1)
	reportPerItem(b, b.Elapsed(), ops, items, m1.Mallocs-m0.Mallocs)
	requireNoLeak(b, base)
}

func reportPerItem(b *testing.B, elapsed time.Duration, ops, items int, mallocs uint64) {
	b.Helper()
	n := float64(ops) * float64(items)
	if n == 0 {
		return
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/n, "ns/item")
	b.ReportMetric(float64(mallocs)/n, "allocs/item")
}

// goroutinesAbove waits, within leakBudget, for the goroutine count to fall
// back to base, and returns how many remain above it.
func goroutinesAbove(base int) int {
	deadline := time.NewTimer(leakBudget)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return 0
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return n - base
		}
	}
}

func requireNoLeak(b *testing.B, base int) {
	b.Helper()
	if extra := goroutinesAbove(base); extra > 0 {
		b.Fatalf("%d goroutines still running %v after the benchmark (baseline %d)", extra, leakBudget, base)
	}
}

func check(b *testing.B, what string, got, want int) {
	b.Helper()
	if got != want {
		b.Fatalf("%s = %d, want %d", what, got, want)
	}
}
