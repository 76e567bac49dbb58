package rx_test

import (
	"errors"
	"fmt"
	"go/ast"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/meshrx/meshrx/rx"
)

// comparingOp is one operator of package rx that compares values with ==
// or keeps them as map keys: an exported function with a type parameter
// constrained by comparable. Over an interface type such a parameter may
// hold, at run time, a slice, map or func, on which == panics; the rule is
// that the operator fails its stream with an *UncomparableError instead,
// after delivering the values before that one and unsubscribing its source.
type comparingOp struct {
	name string
	// build applies the operator to src (values of type any, the third a
	// []int), its output mapped to any.
	build func(src rx.Observable[any]) rx.Observable[any]
	// before is what must arrive before the error.
	before []any
}

func anyOf[T any](src rx.Observable[T]) rx.Observable[any] {
	return rx.Map(src, func(v T) any { return v })
}

// comparingOps lists every comparing operator of package rx;
// TestEveryComparingRxOperatorIsInTheUncomparableTable fails for one that
// is missing.
func comparingOps() []comparingOp {
	id := func(v any) any { return v }
	return []comparingOp{
		{"DistinctUntilChanged", rx.DistinctUntilChanged[any], []any{1, 2}},
		{"Distinct", rx.Distinct[any], []any{1, 2}},
		{"DistinctBy", func(src rx.Observable[any]) rx.Observable[any] { return rx.DistinctBy(src, id) }, []any{1, 2}},
		{"Contains", func(src rx.Observable[any]) rx.Observable[any] { return anyOf(rx.Contains(src, any(99))) }, nil},
		{"SequenceEqual", func(src rx.Observable[any]) rx.Observable[any] {
			return anyOf(rx.SequenceEqual(src, rx.Of[any](1, 2, 3, 4)))
		}, nil},
		{"ToMap", func(src rx.Observable[any]) rx.Observable[any] {
			return anyOf(rx.ToMap(src, func(v any) (any, int) { return v, 0 }))
		}, nil},
		{"GroupBy", func(src rx.Observable[any]) rx.Observable[any] {
			return rx.Map(rx.GroupBy(src, id), func(g rx.Group[any, any]) any { return g.Key })
		}, []any{1, 2}},
	}
}

// pushAll is a source written outside package rx (not fused, reached
// through OnNext behind rx's guard) that pushes its values whatever
// happens.
type pushAll []any

func (p pushAll) Subscribe(o rx.Observer[any]) rx.Subscription {
	for _, v := range p {
		o.OnNext(v)
	}
	o.OnCompleted()
	return noop{}
}

// TestEveryComparingOperatorFailsWithAnUncomparableErrorInsteadOfPanicking
// runs every comparing operator over values of type any of which the third
// is a []int, from a source that fuses (Of, FromSeq, Of behind fused
// stages) and one that does not: no panic, the values before it delivered,
// then an *UncomparableError naming the operator and []int, and a source
// that checks its subscription stops at that value. Negative control: at
// 658dd9b (main, before the check) every operator of the table panicked
// ("runtime error: comparing uncomparable type []int", "hash of unhashable
// type []int" for ToMap and GroupBy), run over Of.
func TestEveryComparingOperatorFailsWithAnUncomparableErrorInsteadOfPanicking(t *testing.T) {
	vals := []any{1, 2, []int{3}, 4}
	sources := []struct {
		name string
		of   func(offered *int) rx.Observable[any]
		// stops: the source checks its subscription before each value.
		stops bool
	}{
		{"Of", func(n *int) rx.Observable[any] { return rx.Do(rx.Of(vals...), func(any) { *n++ }) }, true},
		{"FromSeq", func(n *int) rx.Observable[any] {
			return rx.FromSeq(func(yield func(any) bool) {
				for _, v := range vals {
					*n++
					if !yield(v) {
						return
					}
				}
			})
		}, true},
		{"Of-behind-fused-stages", func(n *int) rx.Observable[any] {
			src := rx.Do(rx.Skip(rx.Of(vals...), 0), func(any) { *n++ })
			return rx.Filter(rx.Map(src, func(v any) any { return v }), func(any) bool { return true })
		}, true},
		{"foreign", func(n *int) rx.Observable[any] {
			return rx.Do[any](pushAll(vals), func(any) { *n++ })
		}, false},
	}
	for _, op := range comparingOps() {
		for _, so := range sources {
			t.Run(op.name+"/"+so.name, func(t *testing.T) {
				offered := 0
				var got []any
				var gotErr error
				ends := 0
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("panicked: %v", p)
						}
					}()
					op.build(so.of(&offered)).Subscribe(rx.NewObserver(
						func(v any) { got = append(got, v) },
						func(err error) { gotErr = err; ends++ },
						func() { ends++ }))
				}()
				var ue *rx.UncomparableError
				if !errors.As(gotErr, &ue) {
					t.Fatalf("ended with %v (%d ends), want an *UncomparableError", gotErr, ends)
				}
				if ends != 1 {
					t.Errorf("%d terminal notifications, want 1", ends)
				}
				if ue.Op != op.name || ue.Type != reflect.TypeFor[[]int]() {
					t.Errorf("error %+v, want Op %s and Type []int", ue, op.name)
				}
				if !strings.Contains(ue.Error(), "[]int") || !strings.Contains(ue.Error(), op.name) {
					t.Errorf("message %q names neither the type nor the operator", ue.Error())
				}
				if !reflect.DeepEqual(got, op.before) {
					t.Errorf("values %v before the error, want %v", got, op.before)
				}
				if so.stops && offered != 3 {
					t.Errorf("the source offered %d values, want 3: it goes on past the error", offered)
				}
			})
		}
	}
}

// TestAComparingOperatorOverAComparableDynamicTypeStillCompares: the check
// changes nothing for values that can be compared, including structs and
// arrays holding interfaces whose dynamic values are comparable; a struct
// holding a slice in an interface field is caught.
func TestAComparingOperatorOverAComparableDynamicTypeStillCompares(t *testing.T) {
	type box struct{ X any }
	got, err := rx.Collect(t.Context(), rx.DistinctUntilChanged(rx.Of(box{1}, box{1}, box{"a"}, box{[1]any{2}}, box{[1]any{2}})))
	if err != nil || len(got) != 3 {
		t.Fatalf("got %v, %v; want three boxes", got, err)
	}
	_, err = rx.Collect(t.Context(), rx.Distinct(rx.Of(box{1}, box{[1]any{[]string{"x"}}})))
	var ue *rx.UncomparableError
	if !errors.As(err, &ue) || ue.Type != reflect.TypeFor[[]string]() {
		t.Fatalf("err %v, want an *UncomparableError naming []string", err)
	}
	n, err := rx.First(t.Context(), rx.Count(rx.Distinct(rx.Of[any](1, "1", 1.0, nil, nil, 1))))
	if err != nil || n != 4 {
		t.Fatalf("Distinct over comparable values of mixed types counted %d (%v), want 4", n, err)
	}
}

// TestContainsRefusesAnUncomparableArgumentAtSubscription: the argument v
// is checked once, before the source is subscribed.
func TestContainsRefusesAnUncomparableArgumentAtSubscription(t *testing.T) {
	subscribed := false
	src := rx.Defer(func() rx.Observable[any] { subscribed = true; return rx.Of[any](1) })
	_, err := rx.First(t.Context(), rx.Contains(src, any(map[int]int{})))
	var ue *rx.UncomparableError
	if !errors.As(err, &ue) || ue.What != "argument v" || ue.Type != reflect.TypeFor[map[int]int]() {
		t.Fatalf("err %v, want an *UncomparableError for argument v of type map[int]int", err)
	}
	if subscribed {
		t.Error("the source was subscribed")
	}
}

// comparingFuncs returns the exported functions of package rx with a type
// parameter constrained by comparable.
func comparingFuncs(t *testing.T) []string {
	var out []string
	for _, fd := range exportedFuncs(t) {
		if fd.Type.TypeParams == nil {
			continue
		}
		for _, p := range fd.Type.TypeParams.List {
			if id, ok := p.Type.(*ast.Ident); ok && id.Name == "comparable" {
				out = append(out, fd.Name.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// missingComparing returns the functions of funcs not named in ops.
func missingComparing(funcs []string, ops []comparingOp) []string {
	var missing []string
	for _, name := range funcs {
		if !slices.ContainsFunc(ops, func(x comparingOp) bool { return x.name == name }) {
			missing = append(missing, name)
		}
	}
	return missing
}

// TestEveryComparingRxOperatorIsInTheUncomparableTable reads package rx's
// sources and fails for an exported function with a comparable type
// parameter that comparingOps does not list, so that the next comparing
// operator cannot skip the rule. Negative control in the test: the table
// without its DistinctUntilChanged row is reported.
func TestEveryComparingRxOperatorIsInTheUncomparableTable(t *testing.T) {
	funcs := comparingFuncs(t)
	if len(funcs) < 7 {
		t.Fatalf("found only %v: is the test reading package rx?", funcs)
	}
	ops := comparingOps()
	if missing := missingComparing(funcs, ops); len(missing) > 0 {
		t.Errorf("comparing rx operators missing from comparingOps: %v", missing)
	}
	for _, x := range ops {
		if !slices.Contains(funcs, x.name) {
			t.Errorf("comparingOps lists %s, which has no comparable type parameter", x.name)
		}
	}
	short := slices.DeleteFunc(slices.Clone(ops), func(x comparingOp) bool { return x.name == "DistinctUntilChanged" })
	if got := fmt.Sprint(missingComparing(funcs, short)); got != "[DistinctUntilChanged]" {
		t.Errorf("negative control: a table without DistinctUntilChanged reported %s missing", got)
	}
}
