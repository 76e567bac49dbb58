package mesh_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// nilArgRow is one (function, argument) pair of package mesh given nil.
// param is the parameter it covers, as the declaration names it
// ("receiver" for the receiver); arg is what the *mesh.ArgumentError must
// name (an element of a list, a field of a receiver), "" for param.
//
// Exactly one of refuse and answer is set. refuse is for a nil that makes
// no sense: it calls the function with nil there and usable values
// elsewhere and returns the error the caller sees (for a stream, at
// subscription), which must be an *mesh.ArgumentError naming the function
// and the argument. answer is for a nil the function documents a meaning
// for (an optional argument, a nil-safe receiver, a function with no error
// result): it returns "" when the documented answer came, else what came.
type nilArgRow struct {
	fn, param, arg string
	refuse         func() error
	answer         func() string
}

// refuse and answer keep the table readable.
func refuse(fn, param, arg string, call func() error) nilArgRow {
	return nilArgRow{fn: fn, param: param, arg: arg, refuse: call}
}

func answer(fn, param string, call func() string) nilArgRow {
	return nilArgRow{fn: fn, param: param, answer: call}
}

// firstErr subscribes src and returns the error it ends with, nil if it
// sends a value or completes; a stream failing at subscription answers at
// once.
func firstErr[T any](src rx.Observable[T]) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := rx.First(ctx, src)
	if errors.Is(err, rx.ErrEmpty) {
		return nil
	}
	return err
}

// want formats a mismatch for an answer row: "" when got equals exp.
func want[T comparable](got, exp T) string {
	if got == exp {
		return ""
	}
	return fmt.Sprintf("got %v, want %v", got, exp)
}

type argsProvider struct{}

func (argsProvider) Name() string { return "args" }
func (argsProvider) Query(*mesh.Query) rx.Observable[mesh.Change] {
	return rx.Return(mesh.Change{Kind: mesh.Initial})
}

type argsBackend struct{ argsProvider }

func (argsBackend) Partitions(*mesh.Query) ([]string, error) { return []string{"acme"}, nil }
func (argsBackend) Watch(*mesh.Query, mesh.Reach) rx.Observable[mesh.Change] {
	return argsProvider{}.Query(nil)
}

func nilArgRows(t *testing.T) []nilArgRow {
	router, err := mesh.NewRouter(mesh.RouterConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	q := mustParse(t, "namespace:acme")
	clk := rxtest.NewClock()
	querier := func(edit func(*mesh.Querier)) func() error {
		return func() error {
			qr := &mesh.Querier{Backend: argsBackend{}, Router: router, Providers: []mesh.Provider{argsProvider{}},
				Clock: clk, InitialBudget: time.Second}
			edit(qr)
			return firstErr(qr.Query("namespace:acme"))
		}
	}
	a, b := node("acme/b", "T"), node("acme/a", "T")
	return []nilArgRow{
		answer("(*AllowList).Allows", "receiver", func() string {
			return want((*mesh.AllowList)(nil).Allows("nodeType:* path:- scope:exact"), false)
		}),
		answer("(*AllowList).Len", "receiver", func() string { return want((*mesh.AllowList)(nil).Len(), 0) }),
		answer("(*AllowList).Shapes", "receiver", func() string {
			return want(len((*mesh.AllowList)(nil).Shapes()), 0)
		}),
		refuse("ParseAllowList", "r", "", func() error { _, err := mesh.ParseAllowList(nil); return err }),

		refuse("FanIn", "q", "", func() error {
			return firstErr(mesh.FanIn(nil, []mesh.Provider{argsProvider{}}, clk, time.Second))
		}),
		refuse("FanIn", "clk", "", func() error {
			return firstErr(mesh.FanIn(q, []mesh.Provider{argsProvider{}}, nil, time.Second))
		}),
		refuse("FanIn", "providers", "providers[1]", func() error {
			return firstErr(mesh.FanIn(q, []mesh.Provider{argsProvider{}, nil}, clk, time.Second))
		}),
		// No providers: documented, an empty Initial at once.
		answer("FanIn", "providers", func() string {
			c, err := rx.First(context.Background(), mesh.FanIn(q, nil, clk, time.Second))
			if err != nil || c.Kind != mesh.Initial || len(c.Items) != 0 {
				return fmt.Sprintf("got %v, %v; want an empty Initial", c, err)
			}
			return ""
		}),

		answer("(*Query).Matches", "receiver", func() string { return want((*mesh.Query)(nil).Matches(a), true) }),
		answer("(*Query).NodeTypes", "receiver", func() string {
			types, constrained := (*mesh.Query)(nil).NodeTypes()
			return want(fmt.Sprint(types, constrained), fmt.Sprint([]string(nil), false))
		}),
		answer("(*Query).Less", "receiver", func() string { return want((*mesh.Query)(nil).Less(b, a), true) }),
		answer("(*Query).String", "receiver", func() string { return want((*mesh.Query)(nil).String(), "") }),
		answer("(*Query).SortNodes", "receiver", func() string {
			nodes := []mesh.Node{a, b}
			(*mesh.Query)(nil).SortNodes(nodes)
			return want(nodes[0].Path, "acme/a")
		}),
		answer("(*Query).SortNodes", "nodes", func() string { q.SortNodes(nil); return "" }),
		answer("DescribeShape", "q", func() string {
			return want(mesh.DescribeShape(nil), "nodeType:* path:- scope:exact")
		}),
		answer("Project", "sel", func() string { return want(mesh.Project(a, nil).Path, a.Path) }),
		answer("WithSecurityTypes", "extra", func() string {
			return want(fmt.Sprint(mesh.WithSecurityTypes(nil)), fmt.Sprint(mesh.SecurityTypes()))
		}),
		answer("IsUnavailable", "err", func() string { return want(mesh.IsUnavailable(nil), false) }),
		answer("And.String", "receiver", func() string { return want(mesh.And(nil).String(), "") }),
		answer("Or.String", "receiver", func() string { return want(mesh.Or(nil).String(), "") }),

		refuse("(*State).UnmarshalText", "receiver", "", func() error { return (*mesh.State)(nil).UnmarshalText([]byte("active")) }),
		refuse("(*State).UnmarshalText", "b", "", func() error { var s mesh.State; return s.UnmarshalText(nil) }),

		refuse("(*Querier).Query", "receiver", "", func() error { return firstErr((*mesh.Querier)(nil).Query("namespace:acme")) }),
		// mesh.Querier{} has a nil Backend, named first.
		refuse("(*Querier).Query", "receiver", "Querier.Backend", func() error {
			return firstErr((&mesh.Querier{}).Query("namespace:acme"))
		}),
		refuse("(*Querier).Query", "receiver", "Querier.Router", querier(func(qr *mesh.Querier) { qr.Router = nil })),
		refuse("(*Querier).Query", "receiver", "Querier.Router", querier(func(qr *mesh.Querier) { qr.Router = &mesh.Router{} })),
		refuse("(*Querier).Query", "receiver", "Querier.Providers[0]", querier(func(qr *mesh.Querier) { qr.Providers[0] = nil })),
		refuse("(*Querier).Query", "receiver", "Querier.Clock", querier(func(qr *mesh.Querier) { qr.Clock = nil })),
		// Merged with no providers needs no fan-in, hence no clock; Until is optional.
		answer("(*Querier).Query", "receiver", func() string {
			err := querier(func(qr *mesh.Querier) { qr.Clock, qr.Providers, qr.Merged, qr.Until = nil, nil, true, nil })()
			return want(err, nil)
		}),

		answer("(*Router).NeverNarrowed", "receiver", func() string {
			return want(fmt.Sprint((*mesh.Router)(nil).NeverNarrowed("Article"), (&mesh.Router{}).NeverNarrowed("Article")), "true true")
		}),
		refuse("(*Router).Route", "receiver", "", func() error { _, err := (*mesh.Router)(nil).Route(q, nil); return err }),
		refuse("(*Router).Route", "receiver", "", func() error {
			_, err := (&mesh.Router{}).Route(mustParse(t, "partitions:all"), nil)
			return err
		}),
		refuse("(*Router).Route", "q", "", func() error { _, err := router.Route(nil, []string{"acme"}); return err }),
		// No partitions known: a fan-out over none.
		answer("(*Router).Route", "partitions", func() string {
			r, err := router.Route(mustParse(t, "partitions:all"), nil)
			return want(fmt.Sprint(r.Kind, len(r.Schemas), err), fmt.Sprint(mesh.FanOut, 0, nil))
		}),
		answer("(*Router).SchemaFor", "receiver", func() string {
			s, ok := (*mesh.Router)(nil).SchemaFor("_Access/g1")
			s2, ok2 := (&mesh.Router{}).SchemaFor("acme/x")
			return want(fmt.Sprint(s, ok, s2, ok2), fmt.Sprint("", false, "", false))
		}),
		answer("(*Router).GlobalSchema", "receiver", func() string {
			return want(fmt.Sprint((*mesh.Router)(nil).GlobalSchema("access"), (&mesh.Router{}).GlobalSchema("access")), "false false")
		}),
	}
}

// nilArgExcluded are the (function, parameter) pairs with no row, and why.
// An Error or Unwrap method of an error type (named *Error) is excluded as
// a kind, in isExcluded: it has no error result to report with, the
// package never hands out a nil one, and fmt prints a nil one as <nil>.
var nilArgExcluded = map[string]string{}

func isExcluded(fn, param string) bool {
	if _, ok := nilArgExcluded[fn+" "+param]; ok {
		return true
	}
	recv, method, ok := strings.Cut(fn, ").")
	return ok && param == "receiver" && strings.HasSuffix(recv, "Error") && (method == "Error" || method == "Unwrap")
}

// A nil where one makes no sense — a nil query, clock, provider in a list,
// reader, or a receiver not made by its constructor — is a mistake a
// caller can make with data (a lookup that found nothing, a zero struct):
// every exported function and method of package mesh refuses it with an
// *ArgumentError naming the function and the argument (for a stream, at
// subscription), never a panic and never an untyped error; a nil the
// function documents a meaning for gets that meaning, without a panic. The
// table has a row for every (function, nilable parameter) the package
// declares.
//
// Negative control, run by hand: with the checks removed one at a time
// (or all at once), the rows failed: "FanIn q", "ParseAllowList r",
// "FanIn providers (providers[1])", "(*State).UnmarshalText receiver",
// "(*Querier).Query receiver" and "(Querier.Backend)", "(Querier.Providers[0])",
// and the Router's NeverNarrowed, SchemaFor, GlobalSchema and Route on a nil
// receiver "panicked with runtime error: invalid memory address or nil
// pointer dereference"; "FanIn clk" and "(Querier.Clock)" "panicked with
// rx.Timer: nil clock"; "(*Router).Route receiver" on the zero Router got
// <nil> (it routed with no satellites), as did a Querier with a nil or
// zero Router; with Route's nil query answered by errors.New as before,
// "(*Router).Route q" failed with "got mesh: Route needs a query, got nil,
// want an *mesh.ArgumentError"; with ParseState's fmt.Errorf as before,
// "(*State).UnmarshalText b" got an untyped error. Without the row for
// IsUnavailable, the completeness check failed with "exported functions
// with a nilable parameter without a row: [IsUnavailable err]".
func TestEveryMeshFunctionRefusesANilArgumentWithATypedError(t *testing.T) {
	rows := nilArgRows(t)
	covered := map[string]bool{}
	for _, r := range rows {
		covered[r.fn+" "+r.param] = true // before the call: a failing row is still a row
		name := r.fn + " " + r.param
		if r.arg != "" {
			name += " (" + r.arg + ")"
		}
		var got error
		var wrong string
		if p := testkit.Recovered(func() {
			if r.answer != nil {
				wrong = r.answer()
				return
			}
			got = r.refuse()
		}); p != nil {
			t.Errorf("%s: panicked with %v", name, p)
			continue
		}
		if r.answer != nil {
			if wrong != "" {
				t.Errorf("%s: not the documented answer: %s", name, wrong)
			}
			continue
		}
		arg := r.arg
		if arg == "" {
			arg = r.param
		}
		var ae *mesh.ArgumentError
		if !errors.As(got, &ae) || ae.Func != "mesh."+r.fn || ae.Arg != arg {
			t.Errorf("%s: got %v, want an *mesh.ArgumentError for mesh.%s's %s", name, got, r.fn, arg)
		}
	}
	funcs := testkit.NilableParams(t, ".", knownForeign)
	if len(funcs) < 15 {
		t.Errorf("only %d functions with a nilable parameter: is the test reading package mesh?", len(funcs))
	}
	testkit.CheckNilableRows(t, funcs, covered, isExcluded)
}

// knownForeign says, for a type of another package in a signature,
// whether it can be nil; a type not listed fails the test, to be added.
var knownForeign = map[string]bool{
	"context.Context": true,
	"clock.Clock":     true,
	"io.Reader":       true,
	"rx.Observable":   true,
	"rx.Observer":     true,
	"time.Duration":   false,
	"time.Time":       false,
}
