package rxbench

import (
	"context"
	"testing"

	"github.com/samber/ro"

	"github.com/meshrx/meshrx/rx"
)

// The higher-order and multi-source operators of issue 20 (batch 2) that ro
// v0.3.0 also has, built alike over synchronous sources and reduced to an
// int sum (checked against each other by TestB20LibrariesAgree). ro's
// Sample is real-time only (SampleTime), and it has no Switch, Expand,
// ForkJoin, WithLatestFrom, RetryWhen, WindowCount/WindowTime (its
// WindowWhen is Window) or a concurrency limit on MergeMap: those are not
// compared.

func b20SumOf(vs []int) int {
	s := 0
	for _, v := range vs {
		s += v
	}
	return s
}

func b20SumOf64(vs []int64) int64 {
	var s int64
	for _, v := range vs {
		s += v
	}
	return s
}

func b20Cases() []b12Case {
	const outer, inner = 1000, b12N / 1000
	rxInners := func() rx.Observable[rx.Observable[int]] {
		return rx.Map(rx.Range(0, outer), func(int) rx.Observable[int] { return rx.Range(0, inner) })
	}
	roInners := func() ro.Observable[ro.Observable[int64]] {
		return ro.Pipe1(ro.Range(0, outer), ro.Map(func(int64) ro.Observable[int64] { return ro.Range(0, inner) }))
	}
	return []b12Case{
		{"GroupBy", 0, func() rx.Observable[int] {
			groups := rx.GroupBy(rx.Range(0, b12N), func(v int) int { return v % 16 })
			return rx.MergeAll(rx.Map(groups, func(g rx.Group[int, int]) rx.Observable[int] { return g }))
		}, func() ro.Observable[int64] {
			return ro.Pipe2(ro.Range(0, b12N), ro.GroupBy(func(v int64) int64 { return v % 16 }), ro.MergeAll[int64]())
		}},
		// 1e3 inners of 1e2 values each.
		{"MergeAll", 0, func() rx.Observable[int] { return rx.MergeAll(rxInners()) },
			func() ro.Observable[int64] { return ro.Pipe1(roInners(), ro.MergeAll[int64]()) }},
		{"ConcatAll", 0, func() rx.Observable[int] { return rx.ConcatAll(rxInners()) },
			func() ro.Observable[int64] { return ro.Pipe1(roInners(), ro.ConcatAll[int64]()) }},
		{"Race", 0, func() rx.Observable[int] { return rx.Race(rx.Range(0, b12N), rx.Empty[int]()) },
			func() ro.Observable[int64] { return ro.Race(ro.Range(0, b12N), ro.Empty[int64]()) }},
		// The one-value source first, so that every value of the other
		// makes a combination.
		{"CombineLatest", 0, func() rx.Observable[int] {
			return rx.Map(rx.CombineLatest(rx.Return(0), rx.Range(0, b12N)), b20SumOf)
		}, func() ro.Observable[int64] {
			return ro.Pipe2(ro.Just(ro.Just[int64](0), ro.Range(0, b12N)), ro.CombineLatestAll[int64](), ro.Map(b20SumOf64))
		}},
		// As Zip2: the first source is read in full first, 1e4 per side.
		{"Zip", b12N / 10, func() rx.Observable[int] {
			return rx.Map(rx.Zip(rx.Range(0, b12N/10), rx.Range(0, b12N/10)), b20SumOf)
		}, func() ro.Observable[int64] {
			return ro.Pipe1(ro.Zip(ro.Range(0, b12N/10), ro.Range(0, b12N/10)), ro.Map(b20SumOf64))
		}},
		// One window (the boundaries never emit): the per-value cost of a
		// window and its flattening. ro's WindowWhen is Rx.NET's Window.
		{"Window", 0, func() rx.Observable[int] {
			return rx.MergeAll(rx.Window(rx.Range(0, b12N), rx.Never[int]()))
		}, func() ro.Observable[int64] {
			return ro.Pipe2(ro.Range(0, b12N), ro.WindowWhen[int64](ro.Never()), ro.MergeAll[int64]())
		}},
		// A fresh ShareReplay per operation (Defer): connect and pass 1e5
		// values through the replay buffer. (One built once would, after
		// its first run, only replay its last value and the completion.)
		{"ShareReplay", 0, func() rx.Observable[int] {
			return rx.Defer(func() rx.Observable[int] { return rx.ShareReplay(rx.Range(0, b12N), 1) })
		}, func() ro.Observable[int64] {
			return ro.Defer(func() ro.Observable[int64] { return ro.Pipe1(ro.Range(0, b12N), ro.ShareReplay[int64](1)) })
		}},
	}
}

// BenchmarkB20Ops2: per source value, rx against ro.
func BenchmarkB20Ops2(b *testing.B) { runB12(b, b20Cases()) }

// TestB20LibrariesAgree runs every B20 case once in each library and
// compares the sums, so a benchmark never measures a wrong answer.
func TestB20LibrariesAgree(t *testing.T) {
	for _, c := range b20Cases() {
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
		if a != b || len(vs) == 0 {
			t.Errorf("%s: rx sums %d over %d values, ro %d over %d", c.name, a, len(vs), b, len(ros))
		}
	}
}

// BenchmarkB20Ops2RxOnly: the batch-2 operators ro v0.3.0 lacks (or has on
// the real clock only), per source value, for the record; SelectMany and
// Zip2 run beside them as rx's own baselines.
func BenchmarkB20Ops2RxOnly(b *testing.B) {
	const outer, inner = 1000, b12N / 1000
	inners := func(int) rx.Observable[int] { return rx.Range(0, inner) }
	cases := []struct {
		name string
		n    int
		src  rx.Observable[int]
	}{
		{"SelectMany", b12N, rx.SelectMany(rx.Range(0, outer), inners)},
		{"SelectManyLimit(4)", b12N, rx.SelectManyLimit(rx.Range(0, outer), inners, 4)},
		{"Switch", b12N, rx.Switch(rx.Map(rx.Range(0, outer), inners))},
		{"Expand", b12N, rx.Expand(rx.Return(1), func(v int) rx.Observable[int] {
			if v >= b12N {
				return rx.Empty[int]()
			}
			return rx.Return(v + 1)
		})},
		{"WithLatestFrom", b12N, rx.WithLatestFrom(rx.Range(0, b12N), rx.Return(1), add)},
		{"ForkJoin", b12N, rx.Map(rx.ForkJoin(rx.Range(0, b12N), rx.Return(1)), b20SumOf)},
		{"WindowCount(100)", b12N, rx.MergeAll(rx.WindowCount(rx.Range(0, b12N), 100))},
	}
	for _, c := range cases {
		b.Run(c.name+"/lib=rx", func(b *testing.B) {
			var err error
			perItem(b, c.n, func() {
				o := &sumObserver{}
				c.src.Subscribe(o)
				sink, err = o.result()
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
