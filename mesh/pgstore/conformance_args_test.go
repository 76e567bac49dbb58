package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
)

// pgArgRow is one (function, argument) of package pgstore given nil (or a
// Store not made by Open): call returns the error the caller sees (for a
// stream, at subscription), which must be an *mesh.ArgumentError naming
// the function (fn, as the package spells it) and the argument (param).
// check, when set, replaces that expectation (a nil that means something,
// or an Options field whose error is an *mesh.OptionsError); extra marks a
// row for no parameter of fn (an Options field).
type pgArgRow struct {
	fn, param string
	call      func() error
	check     func(error) string
	extra     bool
}

func pgArgRows(t *testing.T) []pgArgRow {
	ctx := context.Background()
	var nilCtx context.Context
	var nilDB DB
	n := mesh.Node{Path: "acme/a", NodeType: "T"}
	var rows []pgArgRow
	for _, s := range []*Store{nil, {}} {
		rows = append(rows,
			pgArgRow{fn: "(*Store).Get", param: "receiver", call: func() error { _, err := first(t, s.Get("acme/a")); return err }},
			pgArgRow{fn: "(*Store).Query", param: "receiver", call: func() error { _, err := first(t, s.Query("namespace:acme")); return err }},
			pgArgRow{fn: "(*Store).Changes", param: "receiver", call: func() error { _, err := first(t, s.Changes()); return err }},
			pgArgRow{fn: "(*Store).Feed", param: "receiver", call: func() error { _, err := first(t, s.Feed()); return err }},
			pgArgRow{fn: "(*Store).FeedDown", param: "receiver", call: func() error { _, err := first(t, s.FeedDown()); return err }},
			pgArgRow{fn: "(*Store).Close", param: "receiver", call: func() error { return s.Close() }},
			pgArgRow{fn: "(*Store).Put", param: "receiver", call: func() error { _, err := s.Put(ctx, n); return err }},
			pgArgRow{fn: "(*Store).PutIfVersion", param: "receiver", call: func() error { _, err := s.PutIfVersion(ctx, n, 0); return err }},
			pgArgRow{fn: "(*Store).Delete", param: "receiver", call: func() error { return s.Delete(ctx, "acme/a") }},
			pgArgRow{fn: "(*Store).LocksHeld", param: "receiver", call: func() error { _, err := s.LocksHeld(ctx, "namespace:acme"); return err }},
			pgArgRow{fn: "(*Store).SecurityNodes", param: "receiver", call: func() error { _, err := s.SecurityNodes(ctx); return err }},
			pgArgRow{fn: "(*Store).SecurityVersion", param: "receiver", call: func() error { _, err := s.SecurityVersion(ctx); return err }},
			// Stats has no error result: a Store not made by Open has no counts.
			pgArgRow{fn: "(*Store).Stats", param: "receiver", call: func() error {
				if s.Stats() != (Stats{}) {
					return errors.New("nonzero Stats")
				}
				return nil
			}, check: func(err error) string {
				if err != nil {
					return "want zero Stats"
				}
				return ""
			}},
		)
	}
	rows = append(rows,
		pgArgRow{fn: "Open", param: "ctx", call: func() error { _, err := Open(nilCtx, "postgres://unused", Options{}); return err }},
		pgArgRow{fn: "MigrateURL", param: "ctx", call: func() error { return MigrateURL(nilCtx, "postgres://unused") }},
		pgArgRow{fn: "BackfillKeys", param: "ctx", call: func() error { _, err := BackfillKeys(nilCtx, &pgx.Conn{}); return err }},
		pgArgRow{fn: "BackfillKeys", param: "conn", call: func() error { _, err := BackfillKeys(ctx, nil); return err }},
		pgArgRow{fn: "(*Latency).UnmarshalJSON", param: "receiver", call: func() error { return (*Latency)(nil).UnmarshalJSON([]byte("[1]")) }},
		// nil JSON is no JSON: encoding/json's own typed error.
		pgArgRow{fn: "(*Latency).UnmarshalJSON", param: "b", call: func() error { var l Latency; return l.UnmarshalJSON(nil) },
			check: func(err error) string {
				var se *json.SyntaxError
				if !errors.As(err, &se) {
					return "want a *json.SyntaxError"
				}
				return ""
			}},
		pgArgRow{fn: "Open", param: "opts.Router", extra: true, call: func() error {
			_, err := Open(ctx, "postgres://unused", Options{Router: &mesh.Router{}})
			return err
		}, check: optionsError("pgstore: Options.Router")},
		pgArgRow{fn: "Open", param: "opts.Providers", extra: true, call: func() error {
			_, err := Open(ctx, "postgres://unused", Options{Providers: []mesh.Provider{nil}})
			return err
		}, check: optionsError("pgstore: Options.Providers[0]")},
	)
	for name, f := range map[string]func(context.Context, DB) error{
		"CheckMigrated":      CheckMigrated,
		"Migrate":            Migrate,
		"EnsureGlobalSchema": func(ctx context.Context, db DB) error { return EnsureGlobalSchema(ctx, db, "access") },
		"EnsurePartition":    func(ctx context.Context, db DB) error { _, err := EnsurePartition(ctx, db, "acme"); return err },
	} {
		rows = append(rows,
			pgArgRow{fn: name, param: "ctx", call: func() error { return f(nilCtx, &pgx.Conn{}) }},
			pgArgRow{fn: name, param: "db", call: func() error { return f(ctx, nilDB) }},
		)
	}
	return rows
}

func optionsError(setting string) func(error) string {
	return func(err error) string {
		var oe *mesh.OptionsError
		if !errors.As(err, &oe) || oe.Setting != setting {
			return "want an *mesh.OptionsError for " + setting
		}
		return ""
	}
}

// pgLiveArgRows are the rows that need an open Store: its methods given a
// nil context.
func pgLiveArgRows(t *testing.T) []pgArgRow {
	s := openStore(t, pg.Database(t), Options{})
	var nilCtx context.Context
	n := mesh.Node{Path: "acme/a", NodeType: "T"}
	return []pgArgRow{
		{fn: "(*Store).Put", param: "ctx", call: func() error { _, err := s.Put(nilCtx, n); return err }},
		{fn: "(*Store).PutIfVersion", param: "ctx", call: func() error { _, err := s.PutIfVersion(nilCtx, n, 0); return err }},
		{fn: "(*Store).Delete", param: "ctx", call: func() error { return s.Delete(nilCtx, "acme/a") }},
		{fn: "(*Store).LocksHeld", param: "ctx", call: func() error { _, err := s.LocksHeld(nilCtx, "namespace:acme"); return err }},
		{fn: "(*Store).SecurityNodes", param: "ctx", call: func() error { _, err := s.SecurityNodes(nilCtx); return err }},
		{fn: "(*Store).SecurityVersion", param: "ctx", call: func() error { _, err := s.SecurityVersion(nilCtx); return err }},
	}
}

// A nil where one makes no sense — a nil context, DB or connection, a
// Store not made by Open, a zero Router or a nil Provider in its Options —
// gets a typed error from every exported function and method of package
// pgstore (an *mesh.ArgumentError naming the function and the argument, an
// *mesh.OptionsError naming the setting), never a panic; the table has a
// row for every (function, nilable parameter) the package declares
// (Options' other nil fields are documented defaults).
//
// Negative control, run by hand: without the receiver checks (usable),
// the zero Store's Get crashed the test binary with a nil dereference on
// the store's own goroutine, beyond any recover; with Get's check kept, the
// zero Store's Close panicked holding the store's mutex, and its Put then
// hung until the test binary's timeout. Without the nil-ctx checks, Open
// and MigrateURL given a nil ctx crashed the binary ("cannot create context
// from nil parent", on a resolver goroutine), so a nil context is refused
// before any work starts.
func TestEveryPgstoreFunctionRefusesANilArgumentWithATypedError(t *testing.T) {
	rows := append(pgArgRows(t), pgLiveArgRows(t)...)
	covered := map[string]bool{}
	for _, r := range rows {
		name := r.fn + " " + r.param
		if !r.extra {
			covered[name] = true
		}
		var err error
		if p := testkit.Recovered(func() { err = r.call() }); p != nil {
			t.Errorf("%s: panicked with %v", name, p)
			continue
		}
		if r.check != nil {
			if wrong := r.check(err); wrong != "" {
				t.Errorf("%s: got %v, %s", name, err, wrong)
			}
			continue
		}
		var ae *mesh.ArgumentError
		if !errors.As(err, &ae) || ae.Func != "pgstore."+r.fn || ae.Arg != r.param {
			t.Errorf("%s: got %v, want an *mesh.ArgumentError for pgstore.%s's %s", name, err, r.fn, r.param)
		}
	}
	funcs := testkit.NilableParams(t, ".", map[string]bool{
		"context.Context": true, "rx.Observable": true, "mesh.Node": false, "time.Duration": false,
	})
	testkit.CheckNilableRows(t, funcs, covered, func(fn, _ string) bool {
		// An error's own Error/Unwrap: see mesh's table.
		recv, method, _ := strings.Cut(fn, ").")
		return strings.HasSuffix(recv, "Error") && (method == "Error" || method == "Unwrap")
	})
}
