package rx_test

import (
	"github.com/meshrx/meshrx/rx"
)

// Conformance entries of the comparing operators over an interface type
// (values, or keys, of type any), which take their checked paths (see
// rx.UncomparableError): DistinctUntilChanged's does not fuse, and each
// compares or hashes through its check. The ints of env.in travel as any
// and back, so the rules see the same values as for the int entries; the
// names say the type, and table() appends them.

// asAny maps env's ints to any. The Map is reached through OnNext
// (unfused): the entries are about the comparing operator.
func asAny(src rx.Observable[int]) rx.Observable[any] {
	return rx.Map[int, any](unfused{src}, func(v int) any { return v })
}

func fromAny(src rx.Observable[any]) rx.Observable[int] {
	return rx.Map(src, func(v any) int { return v.(int) })
}

func tableAny() []entry {
	return []entry{
		{name: "DistinctUntilChanged[any]", flags: input, build: func(e *env) rx.Observable[int] {
			return fromAny(rx.DistinctUntilChanged(asAny(e.in)))
		}},
		{name: "Distinct[any]", flags: input, build: func(e *env) rx.Observable[int] { return fromAny(rx.Distinct(asAny(e.in))) }},
		{name: "DistinctBy[key any]", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.DistinctBy(e.in, func(v int) any { e.fn(v); return v })
		}},
		{name: "Contains[any]", flags: input, build: func(e *env) rx.Observable[int] {
			return boolInt(rx.Contains(asAny(e.in), any(1000)))
		}},
		{name: "SequenceEqual[any]", flags: input | holds, build: func(e *env) rx.Observable[int] {
			return boolInt(rx.SequenceEqual(asAny(e.in), asAny(e.in2)))
		}},
		{name: "ToMap[key any]", flags: input | userFn | atEnd, build: func(e *env) rx.Observable[int] {
			return rx.Map(rx.ToMap(e.in, func(v int) (any, int) { e.fn(v); return v, v }), func(m map[any]int) int { return len(m) })
		}},
		{name: "GroupBy[key any]", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			groups := rx.GroupBy(e.in, func(v int) any { e.fn(v); return v % 3 })
			return rx.MergeAll(rx.Map(groups, func(g rx.Group[any, int]) rx.Observable[int] { return g }))
		}},
	}
}
