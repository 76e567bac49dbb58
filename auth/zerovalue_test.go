package auth

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx"
)

// zeroValueRows is every exported type of this package configured by its
// fields with a store among them: a value left without its store decides
// nothing (undetermined, unavailable, an error naming the field), and never
// panics from a goroutine of its own, which would end the process. The
// Authenticator is the one exception, by its documentation: it panics on
// its caller's goroutine, naming Mesh, and Middleware and Require refuse it
// where they are wired (middleware_test.go).
var zeroValueRows = []struct {
	typ   string
	check func(t *testing.T, ctx context.Context, logger *slog.Logger)
}{
	{"FoldSource", func(t *testing.T, ctx context.Context, logger *slog.Logger) {
		s := &FoldSource{Logger: logger}
		_, err := s.Fold(ctx)
		assertConfigError(t, err, "FoldSource.Reader")
		assert.Equal(t, access.Undetermined, s.Decide(ctx, "alice", "alice/doc", access.Read))
		assert.Equal(t, access.Undetermined, s.IsGlobalAdmin(ctx, "alice"))
	}},
	{"PlanTierLadder", func(t *testing.T, ctx context.Context, logger *slog.Logger) {
		l := &PlanTierLadder{Logger: logger}
		ranks, err := rx.First(ctx, l.Read())
		require.NoError(t, err, "Read never fails")
		assert.Empty(t, ranks.IDs(), "the empty ladder: unknown plans license nothing")
		o, err := rx.First(ctx, l.read())
		require.NoError(t, err)
		assertConfigError(t, o.err, "PlanTierLadder.Mesh")

		// Wired into an Authenticator, a ladder without its store makes an
		// authenticated key unavailable, never a panic or a 401.
		s, err := memstore.New(memstore.Options{})
		require.NoError(t, err)
		defer func() { _ = s.Close() }()
		r := &Instances{Mesh: s}
		_, err = r.Register(ctx, "acme", "Acme", "")
		require.NoError(t, err)
		key, err := r.IssueKey(ctx, "acme")
		require.NoError(t, err)
		a := &Authenticator{Mesh: s, Ladder: l, Logger: logger}
		res, err := rx.First(ctx, a.Authenticate("Bearer "+key))
		require.NoError(t, err)
		assert.False(t, res.Authenticated())
		assert.True(t, strings.HasPrefix(res.Unavailable, StagePlanTiers+": "), "unavailable, naming the ladder: %q", res.Unavailable)
	}},
	{"Instances", func(t *testing.T, ctx context.Context, logger *slog.Logger) {
		r := &Instances{}
		calls := map[string]func() error{
			"Register":    func() error { _, err := r.Register(ctx, "acme", "Acme", ""); return err },
			"Instance":    func() error { _, err := r.Instance(ctx, "acme"); return err },
			"IssueKey":    func() error { _, err := r.IssueKey(ctx, "acme"); return err },
			"RotateKey":   func() error { _, err := r.RotateKey(ctx, "acme"); return err },
			"RevokeKey":   func() error { return r.RevokeKey(ctx, "acme", strings.Repeat("a", 64)) },
			"Disable":     func() error { return r.Disable(ctx, "acme") },
			"Enable":      func() error { return r.Enable(ctx, "acme") },
			"SetGrant":    func() error { _, err := r.SetGrant(ctx, "acme", "ops", "Plugins/*"); return err },
			"SetPlanTier": func() error { return r.SetPlanTier(ctx, PlanTier{ID: "pro", Rank: 1}) },
			"KnownPlans":  func() error { _, err := r.KnownPlans(ctx); return err },
		}
		for name, call := range calls {
			err := noPanic(t, call)
			assertConfigError(t, err, "Instances.Mesh", name)
		}
	}},
}

// TestEveryStoreBackedAuthValueLeftWithoutItsStoreDecidesNothingAndDoesNotPanic.
// Negative control, run before the fix: a zero FoldSource's Decide ended
// the test binary (a nil Reader read on the fold's own goroutine: SIGSEGV,
// not recoverable by a server), a zero PlanTierLadder's Read and every
// Instances method panicked with a nil pointer dereference, and an
// Authenticator with a zero Ladder panicked on every authenticated key.
func TestEveryStoreBackedAuthValueLeftWithoutItsStoreDecidesNothingAndDoesNotPanic(t *testing.T) {
	listed := make([]string, 0, len(zeroValueRows))
	for _, row := range zeroValueRows {
		listed = append(listed, row.typ)
	}
	want := append(storeBackedTypes(t), "")
	want = slices.DeleteFunc(want, func(s string) bool { return s == "" || s == "Authenticator" })
	assert.ElementsMatch(t, want, listed, "every exported type of package auth with a store field has a row (the Authenticator is exempt, see zeroValueRows)")

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, row := range zeroValueRows {
		t.Run(row.typ, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			row.check(t, ctx, logger)
		})
	}
}

// storeBackedTypes lists the exported struct types of this package that
// have an exported field of type mesh.Store or mesh.SecurityReader.
func storeBackedTypes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var out []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				sel, ok := field.Type.(*ast.SelectorExpr)
				if ok && (sel.Sel.Name == "Store" || sel.Sel.Name == "SecurityReader") && len(field.Names) > 0 && field.Names[0].IsExported() {
					out = append(out, ts.Name.Name)
					break
				}
			}
			return true
		})
	}
	require.NotEmpty(t, out, "the scan found the package's types")
	return out
}

func noPanic(t *testing.T, call func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("panicked: %v", r)
			err = errors.New("panicked")
		}
	}()
	return call()
}

func assertConfigError(t *testing.T, err error, setting string, msgAndArgs ...any) {
	t.Helper()
	var ce *ConfigError
	if assert.ErrorAs(t, err, &ce, msgAndArgs...) {
		assert.Equal(t, setting, ce.Setting, msgAndArgs...)
	}
}
