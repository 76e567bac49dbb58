package auth

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/rx"
)

// A nil *FoldSource, or a nil context, decides nothing: the fold's error is
// an *auth.ConfigError naming what is missing and every decision is
// Undetermined, never a panic on the caller's goroutine (nil receiver) or a
// nil-context panic out of the read. Negative control, run by hand: without
// the checks at the top of Fold and in logger, each call panicked with
// "invalid memory address or nil pointer dereference" (the warm versioner's
// read failed with a *PanicError, "cannot create context from nil
// parent", rather than naming ctx).
func TestANilFoldSourceOrANilContextDecidesNothingAndDoesNotPanic(t *testing.T) {
	ctx := context.Background()
	var nilSource *FoldSource
	_, err := noPanicFold(t, nilSource, ctx)
	assertConfigError(t, err, "FoldSource")
	assert.Equal(t, access.Undetermined, noPanicDecide(t, func() access.Decision { return nilSource.Decide(ctx, "anna", "acme/doc", access.Read) }))
	assert.Equal(t, access.Undetermined, noPanicDecide(t, func() access.Decision { return nilSource.IsGlobalAdmin(ctx, "root") }))

	s := newSecurityStore(t)
	putNode(t, s, "acme/_Access/anna", AssignmentNodeType, assignment("anna", roleGrant{Role: access.RoleViewer}))
	for name, fs := range map[string]*FoldSource{
		"versioner, cold": {Reader: s, Logger: slog.New(slog.DiscardHandler)},
		"snapshots, cold": {Reader: snapshotsOnlyOf{s}, Logger: slog.New(slog.DiscardHandler)},
		"versioner, warm": warmed(t, &FoldSource{Reader: s, Logger: slog.New(slog.DiscardHandler)}),
		"snapshots, warm": warmed(t, &FoldSource{Reader: snapshotsOnlyOf{s}, Logger: slog.New(slog.DiscardHandler)}),
	} {
		t.Run(name, func(t *testing.T) {
			var nilCtx context.Context
			_, err := noPanicFold(t, fs, nilCtx)
			assertConfigError(t, err, "ctx")
			assert.Equal(t, access.Undetermined, noPanicDecide(t, func() access.Decision { return fs.Decide(nilCtx, "anna", "acme/doc", access.Read) }))
			assert.Equal(t, access.Allowed, fs.Decide(ctx, "anna", "acme/doc", access.Read), "negative control: with a context it allows")
		})
	}
}

func warmed(t *testing.T, fs *FoldSource) *FoldSource {
	_, err := fs.Fold(context.Background())
	require.NoError(t, err)
	return fs
}

func noPanicFold(t *testing.T, fs *FoldSource, ctx context.Context) (f *access.Fold, err error) {
	t.Helper()
	err = noPanic(t, func() error {
		var err error
		f, err = fs.Fold(ctx)
		return err
	})
	return f, err
}

func noPanicDecide(t *testing.T, decide func() access.Decision) (d access.Decision) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("panicked: %v", p)
			d = 255
		}
	}()
	return decide()
}

// Every method of a nil *Instances is refused with an *auth.ConfigError
// naming it, as one without its Mesh is. Negative control, run by hand:
// without the nil check in usable, Register panicked with "invalid memory
// address or nil pointer dereference".
func TestEveryMethodOfANilInstancesIsRefusedWithAConfigError(t *testing.T) {
	ctx := context.Background()
	var r *Instances
	for name, call := range map[string]func() error{
		"Register":    func() error { _, err := r.Register(ctx, "acme", "Acme", ""); return err },
		"Instance":    func() error { _, err := r.Instance(ctx, "acme"); return err },
		"IssueKey":    func() error { _, err := r.IssueKey(ctx, "acme"); return err },
		"RotateKey":   func() error { _, err := r.RotateKey(ctx, "acme"); return err },
		"RevokeKey":   func() error { return r.RevokeKey(ctx, "acme", "mwi_x") },
		"Disable":     func() error { return r.Disable(ctx, "acme") },
		"Enable":      func() error { return r.Enable(ctx, "acme") },
		"SetGrant":    func() error { _, err := r.SetGrant(ctx, "acme", "ops", "Plugins/*"); return err },
		"SetPlanTier": func() error { return r.SetPlanTier(ctx, PlanTier{ID: "pro", Rank: 1}) },
		"KnownPlans":  func() error { _, err := r.KnownPlans(ctx); return err },
	} {
		t.Run(name, func(t *testing.T) {
			assertConfigError(t, noPanic(t, call), "Instances")
		})
	}
}

// FromContext of a nil context finds no Result (nothing authenticated)
// instead of panicking. Negative control, run by hand: without the nil
// check it panicked with "invalid memory address or nil pointer
// dereference".
func TestFromContextOfANilContextFindsNoResult(t *testing.T) {
	var nilCtx context.Context
	var ok bool
	require.NoError(t, noPanic(t, func() error { _, ok = FromContext(nilCtx); return nil }))
	assert.False(t, ok)
}

// A path with a "." or ".." segment names no node (mesh.ValidatePath
// refuses it), and a grant at its literal prefix must not answer for it: a
// caller that cleans the path afterwards would read another scope. Admin
// of the Admin partition is Denied at "Admin/../acme/doc". Negative
// control, run by hand: without the check in Decide, six of the seven
// paths ("Admin/../acme/doc", "Admin/./x", ...) were Allowed for root.
func TestAPathWithADotSegmentIsGrantedNothing(t *testing.T) {
	s := newSecurityStore(t)
	putNode(t, s, "Admin/_Access/root", AssignmentNodeType, assignment("root", roleGrant{Role: access.RoleAdmin}))
	fs := &FoldSource{Reader: s, Logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	require.Equal(t, access.Allowed, fs.Decide(ctx, "root", "Admin/x", access.Read), "negative control: root is Admin of Admin")
	for _, p := range []string{"Admin/../acme/doc", "Admin/./x", "Admin/x/..", "/Admin/../acme", "Admin//../acme", "../Admin/x", "Admin/.."} {
		assert.Equal(t, access.Denied, fs.Decide(ctx, "root", p, access.Read), "path %q", p)
	}
	assert.Equal(t, access.Allowed, fs.Decide(ctx, "root", "Admin/..x/.y", access.Read), "dots inside a segment are a name")
}

// AuthenticateNow with a nil context reads no security version (as with
// within <= 0) and returns the legs, which decide as Authenticate does:
// never a panic, never a kept decision unverified. Negative control, run by
// hand: without the nil check, a key seen before panicked with "cannot
// create context from nil parent".
func TestAuthenticateNowWithANilContextReadsNoVersionAndTheLegsDecide(t *testing.T) {
	f := newFixture(t)
	a := f.authenticator(slog.New(slog.DiscardHandler))
	h := "Bearer " + f.key
	require.True(t, first(t, a.Authenticate(h)).Authenticated(), "negative control: the key authenticates")

	var nilCtx context.Context
	var res Result
	var legs rx.Observable[Result]
	require.NoError(t, noPanic(t, func() error { res, legs = a.AuthenticateNow(nilCtx, h, bound); return nil }))
	require.NotNil(t, legs, "no version read, so no kept decision answers at once")
	assert.False(t, res.Authenticated())
	assert.True(t, first(t, legs).Authenticated(), "the legs decide")
}

// A GrantEntry built in code without its source (the zero value, which
// ParseGrantEntry never returns) names nothing and matches nothing: not
// even a blank source asked about by mistake. Negative control, run by
// hand: without the blank check in Matches, the zero entry matched ("",
// "any") and a grant holding it allowed that pull.
func TestAGrantEntryWithoutASourceMatchesNothing(t *testing.T) {
	ranks := NewPlanTierRanks([]PlanTier{{ID: "free", Rank: 0}})
	for _, e := range []GrantEntry{{}, {Package: AllPackages}, {Source: " ", Package: "x"}} {
		for _, source := range []string{"", " ", "Plugins"} {
			assert.False(t, e.Matches(source, "x"), "%#v matches (%q, x)", e, source)
			assert.False(t, PluginGrant{Entries: []GrantEntry{e}}.Allows(source, "x", "", ranks, "free"), "%#v allows (%q, x)", e, source)
		}
	}
	named, err := ParseGrantEntry("Plugins")
	require.NoError(t, err)
	assert.True(t, named.Matches("plugins", "x"), "negative control: a named source matches")
	assert.False(t, named.Matches("", "x"))
}
