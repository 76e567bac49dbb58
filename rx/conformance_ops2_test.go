package rx_test

import (
	"github.com/meshrx/meshrx/rx"
)

// Conformance entries of the higher-order and multi-source operators of
// issue 20 (batch 2); table() appends them.

// ops2Returns maps each value of e.in to a stream of it (env.inner) through a
// user function. The Map is reached through
// OnNext (unfused): the entries are about the flattening operator, and the
// fusion rule covers Map over a subject on its own.
func ops2Returns(e *env) rx.Observable[rx.Observable[int]] {
	return rx.Map[int, rx.Observable[int]](unfused{e.in}, func(v int) rx.Observable[int] { e.fn(v); return e.inner(v) })
}

func ops2Head(src rx.Observable[[]int]) rx.Observable[int] {
	return rx.Map(src, func(vs []int) int { return vs[0] })
}

func tableOps2() []entry {
	return []entry{
		{name: "GroupBy", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			groups := rx.GroupBy(e.in, func(v int) int { e.fn(v); return v % 3 })
			return rx.MergeAll(rx.Map(groups, func(g rx.Group[int, int]) rx.Observable[int] { return g }))
		}, nils: []func(){func() { rx.GroupBy[int, int](rx.Never[int](), nil) }}},
		{name: "Window", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.MergeAll(rx.Window[int, int](e.in, e.in2))
		}},
		{name: "WindowCount", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.MergeAll(rx.WindowCount[int](e.in, 3))
		}},
		{name: "WindowTime", flags: input | timed, build: func(e *env) rx.Observable[int] {
			return rx.MergeAll(rx.WindowTime[int](e.in, oneMilli, e.clk))
		}, nils: []func(){func() { rx.WindowTime(rx.Never[int](), oneMilli, nil) }}},
		{name: "Sample", flags: input | timed, build: func(e *env) rx.Observable[int] {
			return rx.Sample[int](e.in, oneMilli, e.clk)
		}, nils: []func(){func() { rx.Sample(rx.Never[int](), oneMilli, nil) }}},
		{name: "WithLatestFrom", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.WithLatestFrom(e.in, rx.StartWith[int](e.in2, 0), func(v, _ int) int { e.fn(v); return v })
		}, nils: []func(){func() { rx.WithLatestFrom[int, int, int](rx.Never[int](), rx.Never[int](), nil) }}},
		{name: "CombineLatest", flags: input, build: func(e *env) rx.Observable[int] {
			return ops2Head(rx.CombineLatest(e.in, rx.StartWith[int](e.in2, 0)))
		}},
		{name: "Zip", flags: input | holds, build: func(e *env) rx.Observable[int] {
			return ops2Head(rx.Zip(e.in, rx.Range(0, 10_000)))
		}},
		{name: "ForkJoin", flags: input | atEnd, build: func(e *env) rx.Observable[int] {
			return ops2Head(rx.ForkJoin(e.in, e.in2))
		}},
		{name: "Race", flags: input, build: func(e *env) rx.Observable[int] { return rx.Race[int](e.in, e.in2) }},
		{name: "MergeAll", flags: input | userFn, build: func(e *env) rx.Observable[int] { return rx.MergeAll(ops2Returns(e)) }},
		{name: "ConcatAll", flags: input | userFn, build: func(e *env) rx.Observable[int] { return rx.ConcatAll(ops2Returns(e)) }},
		{name: "Switch", flags: input | userFn, build: func(e *env) rx.Observable[int] { return rx.Switch(ops2Returns(e)) }},
		{name: "SelectManyLimit", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.SelectManyLimit(e.in, func(v int) rx.Observable[int] { e.fn(v); return e.inner(v) }, 2)
		}, nils: []func(){func() { rx.SelectManyLimit[int, int](rx.Never[int](), nil, 1) }}},
		{name: "Expand", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.Expand(e.in, func(v int) rx.Observable[int] {
				e.fn(v)
				if v < 0 {
					return rx.Empty[int]()
				}
				if v == toIn2 {
					return e.in2
				}
				return rx.Return(-1 - v)
			})
		}, nils: []func(){func() { rx.Expand[int](rx.Never[int](), nil) }}},
		{name: "RetryWhen", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.RetryWhen(e.in, func(errs rx.Observable[error]) rx.Observable[int] {
				// The notifier outlives each attempt: env.in2 keeps it subscribed.
				return rx.Merge(rx.Take(rx.Map(errs, func(error) int { return 0 }), 2), rx.IgnoreElements(e.in2))
			})
		}, nils: []func(){func() { rx.RetryWhen[int, int](rx.Never[int](), nil) }}},
		{name: "ShareReplay", flags: input, build: func(e *env) rx.Observable[int] { return rx.ShareReplay[int](e.in, 4) }},
	}
}
