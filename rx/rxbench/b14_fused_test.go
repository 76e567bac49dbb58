package rxbench

import (
	"fmt"
	"iter"
	"testing"

	"github.com/meshrx/meshrx/rx"
)

// b14N is the number of source values per operation in B14 and B15.
const b14N = 100_000

// fns holds the B14 user functions as function values the compiler cannot
// see through: the loop baselines call them through these fields, paying
// the same indirect call per function as rx does.
type fns struct {
	f     func(int) int  // x*2
	g     func(int) int  // x+1
	keep  func(int) bool // x%4 == 0
	keep2 func(int) bool // x%3 != 0
	below func(int) bool // x < b14N
	acc   func(a, v int) int
}

func notThird(x int) bool { return x%3 != 0 }
func belowN(x int) bool   { return x < b14N }

func newFns() *fns {
	return &fns{f: double, g: inc, keep: quarter, keep2: notThird, below: belowN, acc: add}
}

// b14Shape is one pipeline of issue 20's table: the loop through function
// values doing its work, and the same pipeline in rx over a given source.
type b14Shape struct {
	name string
	loop func(st *fns, xs []int) int
	// seqLoop is loop over an iterator: `for x := range seq`, the loop a
	// user of FromSeq would otherwise write.
	seqLoop func(st *fns, seq iter.Seq[int]) int
	// chain builds the stages over src.
	chain func(st *fns, src rx.Observable[int]) rx.Observable[int]
}

func b14Shapes() []b14Shape {
	mapFilter := func(st *fns, src rx.Observable[int]) rx.Observable[int] {
		return rx.Filter(rx.Map(src, st.f), st.keep)
	}
	mapFilterLoop := func(st *fns, xs []int) int {
		s := 0
		for _, x := range xs {
			if y := st.f(x); st.keep(y) {
				s += y
			}
		}
		return s
	}
	mapFilterMapFilter := func(st *fns, src rx.Observable[int]) rx.Observable[int] {
		return rx.Filter(rx.Map(rx.Filter(rx.Map(src, st.f), st.keep), st.g), st.keep2)
	}
	mapFilterMapFilterLoop := func(st *fns, xs []int) int {
		s := 0
		for _, x := range xs {
			if y := st.f(x); st.keep(y) {
				if z := st.g(y); st.keep2(z) {
					s += z
				}
			}
		}
		return s
	}
	return []b14Shape{
		{"map-filter", mapFilterLoop, func(st *fns, seq iter.Seq[int]) int {
			s := 0
			for x := range seq {
				if y := st.f(x); st.keep(y) {
					s += y
				}
			}
			return s
		}, mapFilter},
		{"filter-map", func(st *fns, xs []int) int {
			s := 0
			for _, x := range xs {
				if st.keep(x) {
					s += st.f(x)
				}
			}
			return s
		}, func(st *fns, seq iter.Seq[int]) int {
			s := 0
			for x := range seq {
				if st.keep(x) {
					s += st.f(x)
				}
			}
			return s
		}, func(st *fns, src rx.Observable[int]) rx.Observable[int] {
			return rx.Map(rx.Filter(src, st.keep), st.f)
		}},
		{"map-map-filter", func(st *fns, xs []int) int {
			s := 0
			for _, x := range xs {
				if y := st.g(st.f(x)); st.keep2(y) {
					s += y
				}
			}
			return s
		}, func(st *fns, seq iter.Seq[int]) int {
			s := 0
			for x := range seq {
				if y := st.g(st.f(x)); st.keep2(y) {
					s += y
				}
			}
			return s
		}, func(st *fns, src rx.Observable[int]) rx.Observable[int] {
			return rx.Filter(rx.Map(rx.Map(src, st.f), st.g), st.keep2)
		}},
		{"map-filter-map-filter", mapFilterMapFilterLoop, func(st *fns, seq iter.Seq[int]) int {
			s := 0
			for x := range seq {
				if y := st.f(x); st.keep(y) {
					if z := st.g(y); st.keep2(z) {
						s += z
					}
				}
			}
			return s
		}, mapFilterMapFilter},
		// Four stages of other kinds: Skip(1) → TakeWhile → Scan → DistinctUntilChanged.
		{"skip-takewhile-scan-distinct", func(st *fns, xs []int) int {
			s, acc, last, seen := 0, 0, 0, false
			for i, x := range xs {
				if i < 1 {
					continue
				}
				if !st.below(x) {
					break
				}
				acc = st.acc(acc, x)
				if seen && acc == last {
					continue
				}
				seen, last = true, acc
				s += acc
			}
			return s
		}, func(st *fns, seq iter.Seq[int]) int {
			s, acc, last, seen, i := 0, 0, 0, false, 0
			for x := range seq {
				if i < 1 {
					i++
					continue
				}
				if !st.below(x) {
					break
				}
				acc = st.acc(acc, x)
				if seen && acc == last {
					continue
				}
				seen, last = true, acc
				s += acc
			}
			return s
		}, func(st *fns, src rx.Observable[int]) rx.Observable[int] {
			return rx.DistinctUntilChanged(rx.Scan(rx.TakeWhile(rx.Skip(src, 1), st.below), 0, st.acc))
		}},
	}
}

// b14Source is how values enter a B14 pipeline.
type b14Source struct {
	name string
	// run subscribes o to chain(source of xs) and drives it to completion.
	run func(xs []int, chain func(rx.Observable[int]) rx.Observable[int], o rx.Observer[int])
}

func b14Sources() []b14Source {
	return []b14Source{
		{"Range", func(xs []int, chain func(rx.Observable[int]) rx.Observable[int], o rx.Observer[int]) {
			chain(rx.Range(0, len(xs))).Subscribe(o)
		}},
		{"Of", func(xs []int, chain func(rx.Observable[int]) rx.Observable[int], o rx.Observer[int]) {
			chain(rx.Of(xs...)).Subscribe(o)
		}},
		{"FromSeq", func(xs []int, chain func(rx.Observable[int]) rx.Observable[int], o rx.Observer[int]) {
			chain(rx.FromSeq(rangeSeq(len(xs)))).Subscribe(o)
		}},
		{"Subject", func(xs []int, chain func(rx.Observable[int]) rx.Observable[int], o rx.Observer[int]) {
			s := rx.NewSubject[int]()
			chain(s).Subscribe(o)
			for _, x := range xs {
				s.OnNext(x)
			}
			s.OnCompleted()
		}},
	}
}

// BenchmarkB14FusedShapes: every shape of issue 20's table over every
// synchronous source (Range, Of, FromSeq, a Subject fed by a loop), 1e5
// values, side by side with the loop through function values doing the same
// work (lib=loop). The loop reads the values from a slice for every source:
// the cost of producing them is part of what rx is measured for. For
// FromSeq there is also lib=seqloop, the loop the user would otherwise
// write, `for x := range seq` over the same iterator: it pays the
// iterator's call per value too.
func BenchmarkB14FusedShapes(b *testing.B) {
	xs := make([]int, b14N)
	for i := range xs {
		xs[i] = i
	}
	for _, sh := range b14Shapes() {
		for _, so := range b14Sources() {
			b.Run(fmt.Sprintf("shape=%s-%s", so.name, sh.name), func(b *testing.B) {
				st := newFns()
				want := sh.loop(st, xs)
				b.Run("lib=loop", func(b *testing.B) {
					perItem(b, b14N, func() { sink = sh.loop(st, xs) })
					check(b, "sum", sink, want)
				})
				if so.name == "FromSeq" {
					seq := rangeSeq(len(xs))
					b.Run("lib=seqloop", func(b *testing.B) {
						perItem(b, b14N, func() { sink = sh.seqLoop(st, seq) })
						check(b, "sum", sink, want)
					})
				}
				b.Run("lib=rx", func(b *testing.B) {
					chain := func(src rx.Observable[int]) rx.Observable[int] { return sh.chain(st, src) }
					var err error
					perItem(b, b14N, func() {
						o := &sumObserver{}
						so.run(xs, chain, o)
						sink, err = o.result()
					})
					if err != nil {
						b.Fatal(err)
					}
					check(b, "sum", sink, want)
				})
			})
		}
	}
}
