package rxbench

import (
	"context"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/samber/ro"

	"github.com/meshrx/meshrx/rx"
)

// b12Ops1Cases are the operators of issue 20's first batch that ro v0.3.0
// also has, built in both libraries over Range(0, b12N) (OnErrorResumeNext
// and Repeat: over the sizes named) and reduced to an int sum, as
// b12Cases. SkipUntil is left out: ro subscribes the source before the
// signal, so over a synchronous source it skips every value (rx, as Rx.NET
// and RxJS, subscribes the signal first), and there is nothing alike to
// time.
func b12Ops1Cases() []b12Case {
	rxRange := func() rx.Observable[int] { return rx.Range(0, b12N) }
	roRange := func() ro.Observable[int64] { return ro.Range(0, b12N) }
	last := b12N - 1
	rxBool := func(src rx.Observable[bool]) rx.Observable[int] {
		return rx.Map(src, func(b bool) int {
			if b {
				return 1
			}
			return 0
		})
	}
	roBool := func(src ro.Observable[bool]) ro.Observable[int64] {
		return ro.Pipe1(src, ro.Map(func(b bool) int64 {
			if b {
				return 1
			}
			return 0
		}))
	}
	return []b12Case{
		{"Last", 0, func() rx.Observable[int] { return rx.Last(rxRange()) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.Last(func(int64) bool { return true })) }},
		{"ElementAt(last)", 0, func() rx.Observable[int] { return rx.ElementAt(rxRange(), last) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.ElementAt[int64](last)) }},
		{"Find(last)", 0, func() rx.Observable[int] { return rx.Find(rxRange(), func(v int) bool { return v == last }) },
			func() ro.Observable[int64] {
				return ro.Pipe1(roRange(), ro.Find(func(v int64) bool { return v == int64(last) }))
			}},
		{"Contains(last)", 0, func() rx.Observable[int] { return rxBool(rx.Contains(rxRange(), last)) },
			func() ro.Observable[int64] {
				return roBool(ro.Pipe1(roRange(), ro.Contains(func(v int64) bool { return v == int64(last) })))
			}},
		{"Every (ro: All)", 0, func() rx.Observable[int] { return rxBool(rx.Every(rxRange(), func(v int) bool { return v >= 0 })) },
			func() ro.Observable[int64] {
				return roBool(ro.Pipe1(roRange(), ro.All(func(v int64) bool { return v >= 0 })))
			}},
		{"SequenceEqual", b12N / 10, func() rx.Observable[int] {
			return rxBool(rx.SequenceEqual(rx.Range(0, b12N/10), rx.Range(0, b12N/10)))
		}, func() ro.Observable[int64] {
			return roBool(ro.Pipe1(ro.Range(0, b12N/10), ro.SequenceEqual(ro.Range(0, b12N/10))))
		}},
		{"IgnoreElements", 0, func() rx.Observable[int] { return rx.IgnoreElements(rxRange()) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.IgnoreElements[int64]()) }},
		{"Min", 0, func() rx.Observable[int] { return rx.Min(rxRange()) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.Min[int64]()) }},
		{"Max", 0, func() rx.Observable[int] { return rx.Max(rxRange()) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.Max[int64]()) }},
		{"Sum (rx: checked)", 0, func() rx.Observable[int] { return rx.Sum(rxRange()) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.Sum[int64]()) }},
		{"Average", 0, func() rx.Observable[int] {
			return rx.Map(rx.Average(rxRange()), func(f float64) int { return int(f * 2) })
		}, func() ro.Observable[int64] {
			return ro.Pipe2(roRange(), ro.Average[int64](), ro.Map(func(f float64) int64 { return int64(f * 2) }))
		}},
		{"Pairwise", 0, func() rx.Observable[int] { return rx.Map(rx.Pairwise(rxRange()), func(p [2]int) int { return p[1] }) },
			func() ro.Observable[int64] {
				return ro.Pipe2(roRange(), ro.Pairwise[int64](), ro.Map(func(p []int64) int64 { return p[1] }))
			}},
		{"Materialize+Dematerialize", 0, func() rx.Observable[int] { return rx.Dematerialize(rx.Materialize(rxRange())) },
			func() ro.Observable[int64] {
				return ro.Pipe2(roRange(), ro.Materialize[int64](), ro.Dematerialize[int64]())
			}},
		{"SkipLast(100)", 0, func() rx.Observable[int] { return rx.SkipLast(rxRange(), 100) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.SkipLast[int64](100)) }},
		{"DistinctBy (1,000 keys)", 0, func() rx.Observable[int] {
			return rx.DistinctBy(rxRange(), func(v int) int { return v % 1000 })
		}, func() ro.Observable[int64] {
			return ro.Pipe1(roRange(), ro.DistinctBy(func(v int64) int64 { return v % 1000 }))
		}},
		{"ToMap", 0, func() rx.Observable[int] {
			return rx.Map(rx.ToMap(rxRange(), func(v int) (int, int) { return v, v }), func(m map[int]int) int { return len(m) })
		}, func() ro.Observable[int64] {
			return ro.Pipe2(roRange(), ro.ToMap(func(v int64) (int64, int64) { return v, v }),
				ro.Map(func(m map[int64]int64) int64 { return int64(len(m)) }))
		}},
		{"ThrowIfEmpty", 0, func() rx.Observable[int] { return rx.ThrowIfEmpty(rxRange(), func() error { return context.Canceled }) },
			func() ro.Observable[int64] {
				return ro.Pipe1(roRange(), ro.ThrowIfEmpty[int64](func() error { return context.Canceled }))
			}},
		{"OnErrorReturn", 0, func() rx.Observable[int] { return rx.OnErrorReturn(rxRange(), -1) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.OnErrorReturn[int64](-1)) }},
		{"OnErrorResumeNext (2 sources)", 2 * b12N, func() rx.Observable[int] { return rx.OnErrorResumeNext(rxRange(), rxRange()) },
			func() ro.Observable[int64] { return ro.Pipe1(roRange(), ro.OnErrorResumeNextWith(roRange())) }},
		{"Repeat (10 × 1e4)", 0, func() rx.Observable[int] { return rx.Repeat(rx.Range(0, b12N/10), 10) },
			func() ro.Observable[int64] { return ro.Pipe1(ro.Range(0, b12N/10), ro.RepeatWith[int64](10)) }},
		// Both read the real clock once per value: rx its monotonic part
		// (TimeInterval) or a full time.Now (Timestamp).
		{"Timestamp (real clock)", 0, func() rx.Observable[int] {
			return rx.Map(rx.Timestamp(rxRange(), clock.New()), func(t rx.TimestampValue[int]) int { return t.Value })
		}, func() ro.Observable[int64] {
			return ro.Pipe2(roRange(), ro.Timestamp[int64](), ro.Map(func(t ro.TimestampValue[int64]) int64 { return t.Value }))
		}},
		{"TimeInterval (real clock)", 0, func() rx.Observable[int] {
			return rx.Map(rx.TimeInterval(rxRange(), clock.New()), func(t rx.IntervalValue[int]) int { return t.Value })
		}, func() ro.Observable[int64] {
			return ro.Pipe2(roRange(), ro.TimeInterval[int64](), ro.Map(func(t ro.IntervalValue[int64]) int64 { return t.Value }))
		}},
	}
}

// BenchmarkB12OperatorsBatch1: each operator of issue 20's first batch that
// ro also has, per source value, side by side in one run.
func BenchmarkB12OperatorsBatch1(b *testing.B) { runB12(b, b12Ops1Cases()) }

// TestB12Batch1LibrariesAgree runs every batch-1 case once in each library
// and compares the sums, so a benchmark never measures a wrong answer.
func TestB12Batch1LibrariesAgree(t *testing.T) {
	for _, c := range b12Ops1Cases() {
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
