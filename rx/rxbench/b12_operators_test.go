package rxbench

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/samber/lo"
	"github.com/samber/ro"

	"github.com/meshrx/meshrx/rx"
)

// b12N is the number of source values per operation in B12.
const b12N = 100_000

// b12Case is one operator of issue 10 built in rx and in ro over Range(0,
// b12N), reduced to an int sum so both libraries can be checked against
// each other.
type b12Case struct {
	name string
	n    int // source values per operation, when not b12N
	rx   func() rx.Observable[int]
	ro   func() ro.Observable[int64]
}

func half(v int) bool     { return v < b12N/2 }
func half64(v int64) bool { return v < b12N/2 }
func add(a, v int) int    { return a + v }

func b12Cases() []b12Case {
	rxRange := func() rx.Observable[int] { return rx.Range(0, b12N) }
	roRange := func() ro.Observable[int64] { return ro.Range(0, b12N) }
	return []b12Case{
		{"Skip", 0, func() rx.Observable[int] { return rx.Skip(rxRange(), b12N/2) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.Skip[int64](b12N/2)) }},
		{"SkipWhile", 0, func() rx.Observable[int] { return rx.SkipWhile(rxRange(), half) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.SkipWhile(half64)) }},
		{"TakeWhile", 0, func() rx.Observable[int] { return rx.TakeWhile(rxRange(), half) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.TakeWhile(half64)) }},
		{"TakeLast", 0, func() rx.Observable[int] { return rx.TakeLast(rxRange(), 100) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.TakeLast[int64](100)) }},
		{"Reduce", 0, func() rx.Observable[int] { return rx.Reduce(rxRange(), 0, add) },
			func() ro.Observable[int64] {
				return ro.Pipe1(roRange(), ro.Reduce(func(a, v int64) int64 { return a + v }, 0))
			}},
		{"Count", 0, func() rx.Observable[int] { return rx.Count(rxRange()) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.Count[int64]()) }},
		{"Distinct", 0, func() rx.Observable[int] {
			return rx.Distinct(rx.Map(rxRange(), func(v int) int { return v % 1000 }))
		}, func() ro.Observable[int64] {
			return ro.Pipe2(roRange(), ro.Map(func(v int64) int64 { return v % 1000 }), ro.Distinct[int64]())
		}},
		{"StartWith", 0, func() rx.Observable[int] { return rx.StartWith(rxRange(), 1, 2, 3) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.StartWith[int64](1, 2, 3)) }},
		{"BufferCount", 0, func() rx.Observable[int] {
			return rx.Map(rx.BufferCount(rxRange(), 100), func(b []int) int { return len(b) })
		}, func() ro.Observable[int64] {
			return ro.Pipe2(roRange(), ro.BufferWithCount[int64](100), ro.Map(func(b []int64) int64 { return int64(len(b)) }))
		}},
		// Both read the real clock once per value: rx its monotonic part.
		{"Throttle", 0, func() rx.Observable[int] { return rx.Throttle(rxRange(), time.Hour, clock.New()) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.ThrottleTime[int64](time.Hour)) }},
		// Zip2 reads a synchronous first side in full before subscribing the
		// second, and holds at most rx.ZipLimit values: 1e4 per side here.
		{"Zip2", b12N / 10, func() rx.Observable[int] { return rx.Zip2(rx.Range(0, b12N/10), rx.Range(0, b12N/10), add) },
			func() ro.Observable[int64] {
				return ro.Pipe1(ro.Zip2(ro.Range(0, b12N/10), ro.Range(0, b12N/10)),
					ro.Map(func(t lo.Tuple2[int64, int64]) int64 { return t.A + t.B }))
			}},
	}
}

// BenchmarkB12Operators: each operator of issue 10 that ro also has, over
// 1e5 synchronous values, per source value.
func BenchmarkB12Operators(b *testing.B) { runB12(b, b12Cases()) }

// BenchmarkB13RangeOverAll: a for-range loop over rx.All (the source on a
// goroutine of its own, one hand-over per value) against Collect then range,
// over 1e4 synchronous values.
func BenchmarkB13RangeOverAll(b *testing.B) {
	const n = 10_000
	src := rx.Range(0, n)
	b.Run("lib=rx-All", func(b *testing.B) {
		perItem(b, n, func() {
			s := 0
			for v, err := range rx.All(context.Background(), src) {
				if err != nil {
					b.Fatal(err)
				}
				s += v
			}
			sink = s
		})
		check(b, "sum", sink, n*(n-1)/2)
	})
	b.Run("lib=rx-Collect", func(b *testing.B) {
		perItem(b, n, func() {
			vs, err := rx.Collect(context.Background(), src)
			if err != nil {
				b.Fatal(err)
			}
			s := 0
			for _, v := range vs {
				s += v
			}
			sink = s
		})
		check(b, "sum", sink, n*(n-1)/2)
	})
}

// TestB12LibrariesAgree runs every B12 case once in each library and
// compares the sums, so a benchmark never measures a wrong answer.
func TestB12LibrariesAgree(t *testing.T) {
	for _, c := range b12Cases() {
		vs, err := rx.Collect(context.Background(), c.rx())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ros, err := ro.Collect(c.ro())
		if err != nil {
			t.Fatalf("%s (ro): %v", c.name, err)
		}
		var a, b int64
		for _, v := range vs {
			a += int64(v)
		}
		for _, v := range ros {
			b += v
		}
		if a != b {
			t.Errorf("%s: rx sums %d, ro %d", c.name, a, b)
		}
	}
}

// runB12 runs each case in rx and in ro, side by side, per source value,
// and checks that ro's sum is rx's.
func runB12(b *testing.B, cases []b12Case) {
	for _, c := range cases {
		n := c.n
		if n == 0 {
			n = b12N
		}
		b.Run(c.name, func(b *testing.B) {
			want := -1
			b.Run("lib=rx", func(b *testing.B) {
				src := c.rx()
				var err error
				perItem(b, n, func() {
					o := &sumObserver{}
					src.Subscribe(o)
					sink, err = o.result()
				})
				if err != nil {
					b.Fatal(err)
				}
				want = sink
			})
			b.Run("lib=ro", func(b *testing.B) {
				src := c.ro()
				var s int64
				perItem(b, n, func() {
					s = 0
					src.Subscribe(ro.NewObserver(func(v int64) { s += v }, func(error) { s = -1 }, nil))
					sink = int(s)
				})
				if want >= 0 {
					check(b, "sum (as rx's)", sink, want)
				}
			})
		})
	}
}
