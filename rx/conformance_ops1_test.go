package rx_test

import (
	"context"
	"math"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// boolInt maps an answer to the conformance table's ints: true to 1000, so
// that the memory rule's consumer (which blocks on values >= 1000) blocks
// on an operator answering true while producers push.
func boolInt(src rx.Observable[bool]) rx.Observable[int] {
	return rx.Map(src, func(b bool) int {
		if b {
			return 1000
		}
		return 0
	})
}

// tableOps1 lists the operators of issue 20's first batch (one file each).
func tableOps1() []entry {
	never := rx.Never[int]()
	return []entry{
		{name: "ToChannel", flags: consumer, consume: func(ctx context.Context, src rx.Observable[int]) error {
			for n := range rx.ToChannel(ctx, src, 0) {
				switch n.Kind {
				case rx.OnErrorKind:
					return n.Err
				case rx.OnCompletedKind:
					return nil
				}
			}
			return ctx.Err() // closed without an ending: ctx ended
		}},

		{name: "Last", flags: input | atEnd, build: func(e *env) rx.Observable[int] { return rx.Last[int](e.in) }},
		// Answers at the second value, before its source ends.
		{name: "ElementAt", flags: input, build: func(e *env) rx.Observable[int] { return rx.ElementAt[int](e.in, 1) }},
		{name: "Single", flags: input | atEnd, build: func(e *env) rx.Observable[int] { return rx.Single[int](e.in) }},
		{name: "Find", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.Find(e.in, func(v int) bool { e.fn(v); return v >= 2 })
		}, nils: []func(){func() { rx.Find(never, nil) }}},
		{name: "Contains", flags: input, build: func(e *env) rx.Observable[int] { return boolInt(rx.Contains[int](e.in, 1000)) }},
		{name: "Every", flags: input | userFn | atEnd, build: func(e *env) rx.Observable[int] {
			return boolInt(rx.Every(e.in, func(v int) bool { e.fn(v); return true }))
		}, nils: []func(){func() { rx.Every(never, nil) }}},
		{name: "IsEmpty", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.Map(rx.IsEmpty[int](e.in), func(empty bool) int {
				if empty {
					return 0
				}
				return 1000
			})
		}},
		{name: "SequenceEqual", flags: input | holds, build: func(e *env) rx.Observable[int] {
			return boolInt(rx.SequenceEqual[int](e.in, e.in2))
		}},
		{name: "IgnoreElements", flags: input | atEnd, build: func(e *env) rx.Observable[int] { return rx.IgnoreElements[int](e.in) }},
		{name: "Min", flags: input | atEnd, build: func(e *env) rx.Observable[int] { return rx.Min[int](e.in) }},
		{name: "Max", flags: input | atEnd, build: func(e *env) rx.Observable[int] { return rx.Max[int](e.in) }},
		{name: "Sum", flags: input | atEnd, build: func(e *env) rx.Observable[int] { return rx.Sum[int](e.in) }},
		{name: "Average", flags: input | atEnd, build: func(e *env) rx.Observable[int] {
			return rx.Map(rx.Average[int](e.in), func(f float64) int { return int(math.Round(f)) })
		}},
		{name: "Pairwise", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.Map(rx.Pairwise[int](e.in), func(p [2]int) int { return p[1] })
		}},
		{name: "Materialize", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.Map(rx.Materialize[int](e.in), func(n rx.Notification[int]) int {
				if n.Kind != rx.OnNextKind {
					return -1
				}
				return n.Value
			})
		}},
		{name: "Dematerialize", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.Dematerialize(rx.Materialize[int](e.in))
		}},
		// SkipLast(1) releases each value at the push after it; +1 names
		// it after that push, so the panic rule's observer panics in the
		// caller of OnNext(2), as the rule expects, and not later in one of
		// its producers' goroutines (which no caller could recover).
		{name: "SkipLast", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.Map(rx.SkipLast[int](e.in, 1), func(v int) int { return v + 1 })
		}},
		// The start signal is given at subscription, so values flow (the
		// memory rule needs them to reach the consumer).
		{name: "SkipUntil", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.SkipUntil[int, int](e.in, rx.Return(0))
		}},
		{name: "DistinctBy", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.DistinctBy(e.in, func(v int) int { e.fn(v); return v })
		}, nils: []func(){func() { rx.DistinctBy[int, int](never, nil) }}},
		{name: "ToMap", flags: input | userFn | atEnd, build: func(e *env) rx.Observable[int] {
			return rx.Map(rx.ToMap(e.in, func(v int) (int, int) { e.fn(v); return v, v }), func(m map[int]int) int { return len(m) })
		}, nils: []func(){func() { rx.ToMap[int, int, int](never, nil) }}},
		{name: "ThrowIfEmpty", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.ThrowIfEmpty(e.in, func() error { return rxtest.ErrTest })
		}, nils: []func(){func() { rx.ThrowIfEmpty(never, nil) }}},
		{name: "OnErrorReturn", flags: input, build: func(e *env) rx.Observable[int] { return rx.OnErrorReturn[int](e.in, -1) }},
		{name: "OnErrorResumeNext", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.OnErrorResumeNext[int](e.in, e.in2)
		}},
		// They read the clock but arm no timer: the memory rule applies.
		{name: "Timestamp", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.Map(rx.Timestamp[int](e.in, e.clk), func(t rx.TimestampValue[int]) int { return t.Value })
		}, nils: []func(){func() { rx.Timestamp(never, nil) }}},
		{name: "TimeInterval", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.Map(rx.TimeInterval[int](e.in, e.clk), func(t rx.IntervalValue[int]) int { return t.Value })
		}, nils: []func(){func() { rx.TimeInterval(never, nil) }}},
		{name: "DelaySubscription", flags: input | timed, build: func(e *env) rx.Observable[int] {
			return rx.DelaySubscription[int](e.in, oneMilli, e.clk)
		}, nils: []func(){func() { rx.DelaySubscription(never, oneMilli, nil) }}},
		// The resource is a subscription to env.in2, so the rules see
		// whether it has been released.
		{name: "Using", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.Using(func() (rx.Subscription, error) { return e.in2.Subscribe(rx.NewObserver[int](nil, nil, nil)), nil },
				func(rx.Subscription) rx.Observable[int] { return e.in }, rx.Subscription.Unsubscribe)
		}, nils: []func(){
			func() { rx.Using[int, int](nil, func(int) rx.Observable[int] { return never }, func(int) {}) },
			func() { rx.Using[int, int](func() (int, error) { return 0, nil }, nil, func(int) {}) },
			func() {
				rx.Using[int, int](func() (int, error) { return 0, nil }, func(int) rx.Observable[int] { return never }, nil)
			},
		}},
		{name: "Repeat", flags: input, build: func(e *env) rx.Observable[int] { return rx.Repeat[int](e.in, 2) }},
	}
}
