package auth

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// panickingReader is the real embedded store's security read, made to
// panic on its next panics calls: of the nodes, or with versions set, of
// the version too.
type panickingReader struct {
	inner interface {
		mesh.SecurityReader
		mesh.SecurityVersioner
	}
	panics   atomic.Int64
	versions bool // the version read panics too (the reader is a versioner)
}

func (r *panickingReader) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	if r.panics.Add(-1) >= 0 {
		panic("security read: connection pool torn")
	}
	return r.inner.SecurityNodes(ctx)
}

// versioned is the same reader with its version read.
type versioned struct{ *panickingReader }

func (v versioned) SecurityVersion(ctx context.Context) (mesh.SecurityVersion, error) {
	if v.versions && v.panics.Add(-1) >= 0 {
		panic("version read: connection pool torn")
	}
	return v.inner.SecurityVersion(ctx)
}

// A panic out of the Reader, on the fold's own goroutine, used to end the
// process. Negative control, run by hand: without the recovery in
// FoldSource.load the test binary died with "panic: security read:
// connection pool torn" from the goroutine Fold starts.
func TestAPanickingReaderLeavesTheFoldServing(t *testing.T) {
	s := newSecurityStore(t)
	putNode(t, s, "acme/_Access/anna", AssignmentNodeType, assignment("anna", roleGrant{Role: access.RoleViewer}))
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		reader func(*panickingReader) mesh.SecurityReader
	}{
		{"nodes only", func(r *panickingReader) mesh.SecurityReader { return r }},
		{"versioner", func(r *panickingReader) mesh.SecurityReader { return versioned{r} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &panickingReader{inner: s}
			var log bytes.Buffer
			fs := &FoldSource{Reader: tc.reader(r), Logger: slog.New(slog.NewTextHandler(&log, nil))}

			r.panics.Store(1)
			assert.Equal(t, access.Undetermined, fs.Decide(ctx, "anna", "acme/doc", access.Read), "a panic grants nothing")
			assert.Contains(t, log.String(), "connection pool torn", "the undetermined decision is logged with the panic")

			r.panics.Store(1)
			_, err := fs.Fold(ctx)
			var pe *PanicError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "security read: connection pool torn", pe.Value)
			assert.Contains(t, string(pe.Stack), "SecurityNodes", "the stack is the panicking read's")

			assert.Equal(t, access.Allowed, fs.Decide(ctx, "anna", "acme/doc", access.Read), "the next read answers")
			assert.Equal(t, access.Denied, fs.Decide(ctx, "anna", "acme/doc", access.Update))
		})
	}
}

// A versioner's version read runs on the caller's goroutine once a fold is
// kept; its panic is the decision's error as well, never the kept fold.
// Negative control, run by hand: without the recovery in readVersion the
// panic reached the test ("panic: version read: connection pool torn
// [recovered, repanicked]").
func TestAPanickingVersionReadIsUndeterminedAndTheNextDecisionAnswers(t *testing.T) {
	s := newSecurityStore(t)
	putNode(t, s, "acme/_Access/anna", AssignmentNodeType, assignment("anna", roleGrant{Role: access.RoleViewer}))
	ctx := context.Background()
	r := &panickingReader{inner: s, versions: true}
	fs := &FoldSource{Reader: versioned{r}, Logger: slog.New(slog.DiscardHandler)}
	require.Equal(t, access.Allowed, fs.Decide(ctx, "anna", "acme/doc", access.Read), "negative control: the healthy read allows")

	r.panics.Store(1) // the warm path's version read
	assert.Equal(t, access.Undetermined, fs.Decide(ctx, "anna", "acme/doc", access.Read), "the kept fold is not served")
	r.panics.Store(1)
	_, err := fs.Fold(ctx)
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "version read: connection pool torn", pe.Value)
	assert.Equal(t, access.Allowed, fs.Decide(ctx, "anna", "acme/doc", access.Read), "the next decision answers")
}

// A Logger is the caller's code too: a handler that panics while the fold
// is built (a node left out is logged) must not end the process nor keep
// the build in flight for the next read. Negative control, run by hand:
// without the recovery around build the test binary died with "panic:
// handler torn"; with it but the failed build kept as the version's, the
// next decision was Undetermined (0) instead of Allowed.
func TestAPanickingLoggerWhileBuildingTheFoldIsUndeterminedAndTheNextBuildRuns(t *testing.T) {
	s := newSecurityStore(t)
	putNode(t, s, "acme/_Access/anna", AssignmentNodeType, assignment("anna", roleGrant{Role: access.RoleViewer}))
	putNode(t, s, "acme/Roles/Broken", RoleNodeType, map[string]any{"permissions": "not a set"}) // left out, logged
	ctx := context.Background()
	h := &panickingHandler{}
	h.panics.Store(1)
	fs := &FoldSource{Reader: snapshotsOnlyOf{s}, Logger: slog.New(h)}

	_, err := fs.Fold(ctx)
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "handler torn", pe.Value)
	assert.Equal(t, access.Allowed, fs.Decide(ctx, "anna", "acme/doc", access.Read), "the next read builds the fold again")
}

type snapshotsOnlyOf struct{ r mesh.SecurityReader }

func (s snapshotsOnlyOf) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	return s.r.SecurityNodes(ctx)
}

// panickingHandler panics on its next panics records and drops the rest.
type panickingHandler struct{ panics atomic.Int64 }

func (h *panickingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *panickingHandler) Handle(context.Context, slog.Record) error {
	if h.panics.Add(-1) >= 0 {
		panic("handler torn")
	}
	return nil
}
func (h *panickingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *panickingHandler) WithGroup(string) slog.Handler      { return h }

// panickingTiers is the fixture's store whose tier listing panics on its
// next panics calls: in Query itself, or with onSubscribe, in the
// subscription of the observable it returns.
type panickingTiers struct {
	*faultStore
	panics      atomic.Int64
	onSubscribe bool
}

func (s *panickingTiers) Query(q string) rx.Observable[mesh.Change] {
	if !strings.Contains(q, "namespace:"+TierNamespace) || s.panics.Add(-1) < 0 {
		return s.faultStore.Query(q)
	}
	if !s.onSubscribe {
		panic("tier listing torn")
	}
	return rx.Create(func(context.Context, rx.Observer[mesh.Change]) { panic("tier listing torn") })
}

// The ladder's fill runs the store's listing on its own subscription,
// shared by every reader: a panic there used to leave the fill claimed and
// never settled, so every later read waited forever. Negative control, run
// by hand: without the recovery in PlanTierLadder.start the panic reached
// the reader ("panic: tier listing torn [recovered, repanicked]") with the
// fill left claimed.
func TestAPanickingTierListingFailsItsFillAndTheNextFillRuns(t *testing.T) {
	for _, onSubscribe := range []bool{false, true} {
		t.Run(fmt.Sprintf("onSubscribe=%v", onSubscribe), func(t *testing.T) {
			f := newFixture(t)
			s := &panickingTiers{faultStore: f.store, onSubscribe: onSubscribe}
			logs, logger := testkit.CaptureLogs()
			l := &PlanTierLadder{Mesh: s, Clock: f.clk, Logger: logger}

			s.panics.Store(1)
			o := first(t, l.read())
			var pe *PanicError
			require.ErrorAs(t, o.err, &pe)
			assert.Equal(t, "tier listing torn", pe.Value)
			assert.Empty(t, o.ranks.IDs(), "no snapshot yet: the empty ladder, which licenses nothing")
			assert.Len(t, logs.Messages(slog.LevelWarn), 1)

			assert.Equal(t, 2, rankOf(t, first(t, l.Read()), "pro"), "the next read fills")
		})
	}
}

// ranksOf logs a tier it leaves out through the caller's Logger, on
// whichever goroutine the store completes the listing: a panic there fails
// the fill like the listing's own. Negative control, run by hand: without
// the guard around ranksOf, the fill failed only through start's recovery
// (on this synchronous store) with the stage "listing the plan tiers".
func TestAPanickingLoggerWhileReadingTheTiersFailsItsFillAndTheNextFillRuns(t *testing.T) {
	f := newFixture(t)
	_, err := f.store.Put(context.Background(), mesh.Node{Path: TierPath("gold"), NodeType: TierNodeType, Content: []byte(`{"rank":"high"}`)})
	require.NoError(t, err)
	h := &panickingHandler{}
	h.panics.Store(1)
	l := &PlanTierLadder{Mesh: f.store, Clock: f.clk, Logger: slog.New(h)}

	o := first(t, l.read())
	var pe *PanicError
	require.ErrorAs(t, o.err, &pe)
	assert.Equal(t, "reading the plan tiers", pe.Stage)
	assert.Empty(t, o.ranks.IDs())
	assert.Equal(t, 2, rankOf(t, first(t, l.Read()), "pro"), "the next read fills")
}
