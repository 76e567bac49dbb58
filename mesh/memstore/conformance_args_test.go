package memstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
)

// memArgRow is one (method, argument) of package memstore given nil (or a
// Store not made by New): call returns the error the caller sees (for a
// stream, at subscription), which must be an *mesh.ArgumentError naming
// memstore's function (fn) and the argument (param). A row with opts set is
// one of New's Options given a nil or zero value that makes no sense
// instead: its error must be an *mesh.OptionsError naming that setting.
type memArgRow struct {
	fn, param string
	opts      string
	call      func() error
}

func memArgRows(t *testing.T) []memArgRow {
	live := newStore(t, memstore.Options{})
	ctx := context.Background()
	var nilCtx context.Context
	n := mesh.Node{Path: "acme/a", NodeType: "T"}
	var rows []memArgRow
	// Every method on a nil and on a zero Store, then with a nil ctx.
	for _, s := range []*memstore.Store{nil, {}} {
		rows = append(rows,
			memArgRow{fn: "Get", param: "receiver", call: func() error { _, err := firstErr(s.Get("acme/a")); return err }},
			memArgRow{fn: "Query", param: "receiver", call: func() error { _, err := firstErr(s.Query("namespace:acme")); return err }},
			memArgRow{fn: "Changes", param: "receiver", call: func() error { _, err := firstErr(s.Changes()); return err }},
			memArgRow{fn: "Close", param: "receiver", call: func() error { return s.Close() }},
			memArgRow{fn: "Put", param: "receiver", call: func() error { _, err := s.Put(ctx, n); return err }},
			memArgRow{fn: "PutIfVersion", param: "receiver", call: func() error { _, err := s.PutIfVersion(ctx, n, 0); return err }},
			memArgRow{fn: "Delete", param: "receiver", call: func() error { return s.Delete(ctx, "acme/a") }},
			memArgRow{fn: "Settle", param: "receiver", call: func() error { return s.Settle(ctx) }},
			memArgRow{fn: "SecurityNodes", param: "receiver", call: func() error { _, err := s.SecurityNodes(ctx); return err }},
			memArgRow{fn: "SecurityVersion", param: "receiver", call: func() error { _, err := s.SecurityVersion(ctx); return err }},
			// Stats has no error result: a Store not made by New has no counts.
			memArgRow{fn: "Stats", param: "receiver", call: func() error {
				if s.Stats() != (memstore.Stats{}) {
					return errors.New("nonzero Stats")
				}
				return &mesh.ArgumentError{Func: "memstore.(*Store).Stats", Arg: "receiver"}
			}},
		)
	}
	rows = append(rows,
		memArgRow{fn: "Put", param: "ctx", call: func() error { _, err := live.Put(nilCtx, n); return err }},
		memArgRow{fn: "PutIfVersion", param: "ctx", call: func() error { _, err := live.PutIfVersion(nilCtx, n, 0); return err }},
		memArgRow{fn: "Delete", param: "ctx", call: func() error { return live.Delete(nilCtx, "acme/a") }},
		memArgRow{fn: "Settle", param: "ctx", call: func() error { return live.Settle(nilCtx) }},
		memArgRow{fn: "SecurityNodes", param: "ctx", call: func() error { _, err := live.SecurityNodes(nilCtx); return err }},
		memArgRow{fn: "SecurityVersion", param: "ctx", call: func() error { _, err := live.SecurityVersion(nilCtx); return err }},
		memArgRow{fn: "New", opts: "memstore: Options.Router", call: func() error {
			_, err := memstore.New(memstore.Options{Router: &mesh.Router{}})
			return err
		}},
		memArgRow{fn: "New", opts: "memstore: Options.Providers[0]", call: func() error {
			_, err := memstore.New(memstore.Options{Providers: []mesh.Provider{nil}})
			return err
		}},
	)
	return rows
}

// A nil where one makes no sense — a nil context, a Store not made by New,
// a zero Router or a nil Provider in its Options — gets a typed error from
// every exported function and method of package memstore (an
// *mesh.ArgumentError naming the method and the argument, an
// *mesh.OptionsError naming the setting), never a panic; the table has a
// row for every (method, nilable parameter) the package declares (Options'
// other nil fields are documented defaults).
//
// Negative control, run by hand: without the receiver and ctx checks
// (usable), every receiver and ctx row "panicked with runtime error:
// invalid memory address or nil pointer dereference", but for the zero
// Store's Query (got the Querier's own *mesh.ArgumentError, naming mesh's
// function) and Changes (no answer: "context deadline exceeded" after the
// bound), and Settle with a nil ctx (got <nil>); without New's router
// probe, "New memstore: Options.Router" got <nil> (the store was made, and
// refused every query).
func TestEveryMemstoreMethodRefusesANilArgumentWithATypedError(t *testing.T) {
	covered := map[string]bool{}
	for _, r := range memArgRows(t) {
		name := r.fn + " " + r.param + r.opts
		if r.opts == "" {
			covered["(*Store)."+r.fn+" "+r.param] = true
		}
		var err error
		if p := testkit.Recovered(func() { err = r.call() }); p != nil {
			t.Errorf("%s: panicked with %v", name, p)
			continue
		}
		if r.opts != "" {
			var oe *mesh.OptionsError
			if !errors.As(err, &oe) || oe.Setting != r.opts {
				t.Errorf("%s: got %v, want an *mesh.OptionsError for %s", name, err, r.opts)
			}
			continue
		}
		fn := "memstore.(*Store)." + r.fn
		var ae *mesh.ArgumentError
		if !errors.As(err, &ae) || ae.Func != fn || ae.Arg != r.param {
			t.Errorf("%s: got %v, want an *mesh.ArgumentError for %s's %s", name, err, fn, r.param)
		}
	}
	funcs := testkit.NilableParams(t, ".", map[string]bool{
		"context.Context": true, "rx.Observable": true, "mesh.Node": false, "mesh.Change": false,
	})
	testkit.CheckNilableRows(t, funcs, covered, func(fn, _ string) bool {
		return strings.HasPrefix(fn, "(*SettleError).") // an error's own Error/Unwrap: see mesh's table
	})
}
