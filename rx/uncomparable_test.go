package rx_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
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
// hold, at run time, a slice, map or func, on which == (and hashing)
// panics; the rule is that the operator fails its stream with an
// *UncomparableError instead, after delivering the values before that one
// and unsubscribing its source.
type comparingOp struct {
	name string
	// build applies the operator to src (values of type any: uncomparableVals),
	// its output mapped to any.
	build func(src rx.Observable[any]) rx.Observable[any]
	// before is what must arrive before the error.
	before []any
	// at is the position (from 1) of the value of src that meets == (or a
	// hash) on a []int and fails the stream.
	at int
}

// uncomparableVals is the input of the table: the first []int is hashed by
// the map-based operators, compared by Contains with its []int argument
// and by SequenceEqual with its partner []int; the second is compared by
// DistinctUntilChanged with the first. Each operator's == or hash meets
// two []int there (Go's == on two interfaces of different dynamic types is
// false, no panic), so at 658dd9b every operator of the table panicked on
// it.
func uncomparableVals() []any { return []any{1, 2, []int{3}, []int{4}, 5} }

func anyOf[T any](src rx.Observable[T]) rx.Observable[any] {
	return rx.Map(src, func(v T) any { return v })
}

// comparingOps lists every comparing operator of package rx;
// TestEveryComparingRxOperatorIsInTheUncomparableTable fails for one that
// is missing.
func comparingOps() []comparingOp {
	id := func(v any) any { return v }
	return []comparingOp{
		{"DistinctUntilChanged", rx.DistinctUntilChanged[any], []any{1, 2, []int{3}}, 4},
		{"Distinct", rx.Distinct[any], []any{1, 2}, 3},
		{"DistinctBy", func(src rx.Observable[any]) rx.Observable[any] { return rx.DistinctBy(src, id) }, []any{1, 2}, 3},
		{"Contains", func(src rx.Observable[any]) rx.Observable[any] { return anyOf(rx.Contains(src, any([]int{9}))) }, nil, 3},
		{"SequenceEqual", func(src rx.Observable[any]) rx.Observable[any] {
			// a (Of) is read in full first; src, as b, is compared as it comes.
			return anyOf(rx.SequenceEqual(rx.Of(uncomparableVals()...), src))
		}, nil, 3},
		{"ToMap", func(src rx.Observable[any]) rx.Observable[any] {
			return anyOf(rx.ToMap(src, func(v any) (any, int) { return v, 0 }))
		}, nil, 3},
		{"GroupBy", func(src rx.Observable[any]) rx.Observable[any] {
			return rx.Map(rx.GroupBy(src, id), func(g rx.Group[any, any]) any { return g.Key })
		}, []any{1, 2}, 3},
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
// runs every comparing operator over uncomparableVals, from a source that
// fuses (Of, FromSeq, Of behind fused stages) and one that does not: no
// panic, the values before the failing one delivered, then an
// *UncomparableError naming the operator and []int, and a source that
// checks its subscription stops at that value. Negative control, run at
// 658dd9b (main, before the check) over Of: every operator of the table
// panicked on this input, Distinct, DistinctBy, DistinctUntilChanged,
// Contains and SequenceEqual with "runtime error: comparing uncomparable
// type []int", ToMap and GroupBy with "hash of unhashable type []int". (On
// the earlier input 1, 2, []int{3}, 4 with Contains(src, 99) and
// SequenceEqual(src, Of(1, 2, 3, 4)) only Distinct, DistinctBy, ToMap and
// GroupBy panicked: DistinctUntilChanged delivered all four, Contains and
// SequenceEqual answered false, no == there meeting two []int.)
func TestEveryComparingOperatorFailsWithAnUncomparableErrorInsteadOfPanicking(t *testing.T) {
	vals := uncomparableVals()
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
				if so.stops && offered != op.at {
					t.Errorf("the source offered %d values, want %d: it goes on past the error", offered, op.at)
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

// pairCase is one run of a pair-comparing operator over values of type any.
type pairCase struct {
	name string
	run  func(ctx context.Context) (any, error)
	want any // what 658dd9b delivered, or nil where it panicked
	// fail, if not empty, is the *UncomparableError's With: == met two []int.
	fail string
}

func pairCases() []pairCase {
	type box struct{ X any }
	return []pairCase{
		{"DistinctUntilChanged-never-compares-the-first-value-and-tells-types-apart", func(ctx context.Context) (any, error) {
			return rx.Collect(ctx, rx.DistinctUntilChanged(rx.Of[any](map[string]any{"a": 1}, "x", []any{1})))
		}, []any{map[string]any{"a": 1}, "x", []any{1}}, ""},
		{"DistinctUntilChanged-from-a-foreign-source", func(ctx context.Context) (any, error) {
			return rx.Collect(ctx, rx.DistinctUntilChanged[any](pushAll{map[string]any{"a": 1}, "x", []any{1}}))
		}, []any{map[string]any{"a": 1}, "x", []any{1}}, ""},
		{"DistinctUntilChanged-over-structs-of-different-dynamic-types", func(ctx context.Context) (any, error) {
			return rx.Collect(ctx, rx.DistinctUntilChanged(rx.Of(box{1}, box{[]int{1}}, box{"a"}, box{"a"})))
		}, []box{{1}, {[]int{1}}, {"a"}}, ""},
		{"DistinctUntilChanged-over-arrays-unequal-before-their-slices", func(ctx context.Context) (any, error) {
			return rx.Collect(ctx, rx.DistinctUntilChanged(rx.Of([2]any{1, []int{1}}, [2]any{2, []int{1}})))
		}, [][2]any{{1, []int{1}}, {2, []int{1}}}, ""},
		{"Contains-finds-99-past-a-slice", func(ctx context.Context) (any, error) {
			return rx.First(ctx, rx.Contains(rx.Of[any](1, []int{3}, 99), any(99)))
		}, true, ""},
		{"Contains-with-a-slice-argument-over-other-types", func(ctx context.Context) (any, error) {
			return rx.First(ctx, rx.Contains(rx.Of[any](1, "a", map[int]int{}), any([]int{9})))
		}, false, ""},
		{"SequenceEqual-of-a-slice-and-an-int", func(ctx context.Context) (any, error) {
			return rx.First(ctx, rx.SequenceEqual(rx.Of[any](1, []int{3}), rx.Of[any](1, 2)))
		}, false, ""},
		{"DistinctUntilChanged-of-two-slices", func(ctx context.Context) (any, error) {
			return rx.Collect(ctx, rx.DistinctUntilChanged(rx.Of[any](1, []int{3}, []int{3})))
		}, nil, "the value before it"},
		{"DistinctUntilChanged-of-two-structs-holding-slices", func(ctx context.Context) (any, error) {
			return rx.Collect(ctx, rx.DistinctUntilChanged(rx.Of(box{1}, box{[]int{3}}, box{[]int{3}})))
		}, nil, "the value before it"},
		{"Contains-of-a-slice-and-a-slice-argument", func(ctx context.Context) (any, error) {
			return rx.First(ctx, rx.Contains(rx.Of[any](1, []int{3}), any([]int{9})))
		}, nil, "argument v"},
		{"SequenceEqual-of-two-slices", func(ctx context.Context) (any, error) {
			return rx.First(ctx, rx.SequenceEqual(rx.Of[any](1, []int{3}), rx.Of[any](1, []int{3})))
		}, nil, "its partner of a"},
	}
}

// TestThePairComparingOperatorsFailOnlyWhereGoEqualityWouldPanic:
// DistinctUntilChanged, Contains and SequenceEqual compare pairs, and Go's
// == on two interfaces panics only when both hold the same uncomparable
// dynamic type. Where no == they run meets such a pair they deliver what
// 658dd9b (before the check, which panics only in such an ==) delivered;
// where one does, they fail with an *UncomparableError naming []int and
// both sides. Negative control, run: with the strict check of 8a79117 (the
// three operators' files at 8a79117, which fail on any value holding an
// uncomparable type) the first seven cases end in an *UncomparableError,
// and the last four name no other side.
func TestThePairComparingOperatorsFailOnlyWhereGoEqualityWouldPanic(t *testing.T) {
	for _, c := range pairCases() {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.run(t.Context())
			if c.fail == "" {
				if err != nil || !reflect.DeepEqual(got, c.want) {
					t.Fatalf("got %v, %v; want %v as ==, which does not panic here", got, err, c.want)
				}
				return
			}
			var ue *rx.UncomparableError
			if !errors.As(err, &ue) {
				t.Fatalf("got %v, %v; want an *UncomparableError", got, err)
			}
			if ue.Type != reflect.TypeFor[[]int]() || ue.With != c.fail || ue.Other == nil || ue.Value == nil {
				t.Errorf("error %+v, want Type []int, With %q and both sides", ue, c.fail)
			}
			if !strings.Contains(ue.Error(), c.fail) || !strings.Contains(ue.Error(), "[]int") {
				t.Errorf("message %q names neither the other side nor the type", ue.Error())
			}
		})
	}
}

// comparingFuncs returns the exported functions of package rx with a type
// parameter constrained by comparable.
func comparingFuncs(t *testing.T) []string { return comparingFuncsIn(rxFiles(t)) }

// comparingFuncsIn returns the exported functions of files with a type
// parameter whose constraint is comparable, an interface embedding it
// (interface{ comparable }), or an interface type of files embedding it
// (type eq interface{ comparable }), at any depth. A constraint from
// another package (cmp.Ordered) is not followed: its types are not
// interfaces, so == on them cannot panic.
func comparingFuncsIn(files []*ast.File) []string {
	named := map[string]ast.Expr{}
	for _, f := range files {
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok {
				for _, sp := range gd.Specs {
					if ts, ok := sp.(*ast.TypeSpec); ok {
						named[ts.Name.Name] = ts.Type
					}
				}
			}
		}
	}
	var embeds func(e ast.Expr, seen map[string]bool) bool
	embeds = func(e ast.Expr, seen map[string]bool) bool {
		switch e := e.(type) {
		case *ast.Ident:
			if e.Name == "comparable" {
				return true
			}
			if def, ok := named[e.Name]; ok && !seen[e.Name] {
				seen[e.Name] = true
				return embeds(def, seen)
			}
		case *ast.ParenExpr:
			return embeds(e.X, seen)
		case *ast.InterfaceType:
			for _, m := range e.Methods.List {
				if len(m.Names) == 0 && embeds(m.Type, seen) {
					return true
				}
			}
		}
		return false
	}
	var out []string
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !fd.Name.IsExported() || fd.Type.TypeParams == nil {
				continue
			}
			for _, p := range fd.Type.TypeParams.List {
				if embeds(p.Type, map[string]bool{}) {
					out = append(out, fd.Name.Name)
					break
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestTheComparingTableFindsComparableInsideAConstraint: the reader of
// TestEveryComparingRxOperatorIsInTheUncomparableTable also finds a type
// parameter constrained by interface{ comparable } or by a named
// constraint embedding comparable (directly or through another), and not
// one constrained by any or by an interface without it. Negative control,
// run: the earlier reader (comparable as the constraint's identifier only)
// found [Plain] here, missing Inline, Named and Deep.
func TestTheComparingTableFindsComparableInsideAConstraint(t *testing.T) {
	const src = `package p
type eq interface{ comparable }
type deeper interface{ eq; String() string }
type other interface{ String() string }
func Plain[T comparable](T)                  {}
func Inline[K any, T interface{ comparable }](K, T) {}
func Named[T eq](T)                          {}
func Deep[T deeper](T)                       {}
func Loose[T any, U other](T, U)             {}
func inline[T comparable](T)                 {}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(comparingFuncsIn([]*ast.File{f})); got != "[Deep Inline Named Plain]" {
		t.Errorf("found %s, want [Deep Inline Named Plain]", got)
	}
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
