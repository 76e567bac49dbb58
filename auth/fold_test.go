package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// gatedType is the gated node type of these tests.
const gatedType = "PluginListing"

func newSecurityStore(t testing.TB) *memstore.Store {
	t.Helper()
	s, err := memstore.New(memstore.Options{GatedTypes: append(SecurityTypes(), gatedType)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func putNode(t testing.TB, s mesh.Store, path, nodeType string, content any) {
	t.Helper()
	n := mesh.Node{Path: path, NodeType: nodeType}
	if content != nil {
		b, err := json.Marshal(content)
		require.NoError(t, err)
		n.Content = b
	}
	_, err := s.Put(context.Background(), n)
	require.NoError(t, err, "put %s", path)
}

type roleGrant = access.RoleGrant

func assignment(subject string, roles ...roleGrant) map[string]any {
	return map[string]any{"subject": subject, "roles": roles}
}

func TestEverySecurityTypeWrittenLandsInTheFoldAndADeleteTakesItOut(t *testing.T) {
	s := newSecurityStore(t)
	fs := &FoldSource{Reader: s, GatedTypes: []string{gatedType}}
	ctx := context.Background()

	// What each type's node does once in the fold, on top of a base that
	// gives it something to act on.
	putNode(t, s, "acme/_Access/rita", AssignmentNodeType, assignment("rita", roleGrant{Role: "Auditor"}))
	putNode(t, s, "acme/_Access/editors", AssignmentNodeType, assignment("editors", roleGrant{Role: access.RoleEditor}))
	putNode(t, s, "beta/_Access/paul", AssignmentNodeType, assignment("paul", roleGrant{Role: access.RoleEditor}))
	census := map[string]struct {
		path    string
		content any
		user    string
		at      string
		need    access.Permission
		with    access.Decision
	}{
		RoleNodeType: {"acme/Roles/Auditor", map[string]any{"permissions": []string{"Read", "Export"}},
			"rita", "acme/doc", access.Export, access.Allowed},
		MembershipNodeType: {"acme/Groups/editors/mona", map[string]any{"member": "mona", "groups": []string{"editors"}},
			"mona", "acme/doc", access.Update, access.Allowed},
		AssignmentNodeType: {"acme/_Access/anna", assignment("anna", roleGrant{Role: access.RoleViewer}),
			"anna", "acme/doc", access.Read, access.Allowed},
		PolicyNodeType: {"beta/_Policy", map[string]any{"update": false},
			"paul", "beta/doc", access.Update, access.Denied},
		gatedType: {"store/plugin-a", nil,
			access.Anonymous, "store/plugin-a", access.Read, access.Allowed},
	}

	types := append(SecurityTypes(), gatedType)
	for _, typ := range types {
		c, ok := census[typ]
		require.True(t, ok, "security type %q has no census entry: say what a node of it does in the fold", typ)
		without := access.Allowed
		if c.with == access.Allowed {
			without = access.Denied
		}
		assert.Equal(t, without, fs.Decide(ctx, c.user, c.at, c.need), "%s: before the write", typ)
		putNode(t, s, c.path, typ, c.content)
		assert.Equal(t, c.with, fs.Decide(ctx, c.user, c.at, c.need), "%s: a write lands in the fold", typ)
		require.NoError(t, s.Delete(ctx, c.path))
		assert.Equal(t, without, fs.Decide(ctx, c.user, c.at, c.need), "%s: a delete takes it out", typ)
	}
	assert.Len(t, census, len(types), "the census names no type that is not a security type")
}

// org writes an organisation of 10,000 membership edges (the same shape as
// auth/access's scale test) at paths that sort in row order: alice's team
// edge first, the two edges that make her a contractor last. The writes go
// four at a time, as a store's users would make them.
func org(t testing.TB, s mesh.Store) {
	t.Helper()
	edges := make([][2]string, 0, 10_000)
	edges = append(edges, [2]string{"alice", "team-7"})
	for i := range 9000 {
		edges = append(edges, [2]string{fmt.Sprintf("u%04d", i), fmt.Sprintf("team-%d", i%300)})
	}
	for k := range 300 {
		edges = append(edges, [2]string{fmt.Sprintf("team-%d", k), fmt.Sprintf("dept-%d", k%30)})
	}
	for d := range 30 {
		edges = append(edges, [2]string{fmt.Sprintf("dept-%d", d), "staff"})
	}
	for j := 0; len(edges) < 10_000-2; j++ {
		edges = append(edges, [2]string{fmt.Sprintf("proj-%d", j), fmt.Sprintf("team-%d", j%300)})
	}
	edges = append(edges, [2]string{"vendor-team", "contractors"}, [2]string{"alice", "vendor-team"})
	const writers = 4
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := w; i < len(edges); i += writers {
				content, _ := json.Marshal(map[string]any{"member": edges[i][0], "groups": []string{edges[i][1]}})
				n := mesh.Node{Path: fmt.Sprintf("Org/Memberships/m%05d", i), NodeType: MembershipNodeType, Content: content}
				if _, err := s.Put(context.Background(), n); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	putNode(t, s, "_Access/staff", AssignmentNodeType, assignment("staff", roleGrant{Role: access.RoleViewer}))
	putNode(t, s, "acme/_Access/team-7", AssignmentNodeType, assignment("team-7", roleGrant{Role: access.RoleEditor}))
	putNode(t, s, "acme/_Access/contractors", AssignmentNodeType, assignment("contractors", roleGrant{Role: access.RoleEditor, Denied: true}))
}

func TestAGroupDenyAmong10000MembershipsStillDenies(t *testing.T) {
	s := newSecurityStore(t)
	org(t, s)
	ctx := context.Background()
	fs := &FoldSource{Reader: s}
	assert.Equal(t, access.Denied, fs.Decide(ctx, "alice", "acme/roadmap", access.Update),
		"alice reaches contractors through the last two of 10,000 rows")
	assert.Equal(t, access.Allowed, fs.Decide(ctx, "u0007", "acme/roadmap", access.Update), "the deny is aimed at contractors only")

	// Negative control: the same fold with its memberships read by a paged
	// query (limit:50) loses alice's contractor edges and fails open. That is
	// why the fold reads the maintained materialisation and is never paged.
	page := first(t, s.Query("nodeType:GroupMembership partitions:all limit:50")).Items
	require.Len(t, page, 50)
	snap, err := s.SecurityNodes(ctx)
	require.NoError(t, err)
	paged := slices.DeleteFunc(slices.Clone(snap.Nodes), func(n mesh.Node) bool { return n.NodeType == MembershipNodeType })
	paged = append(paged, page...)
	rows, skipped, err := BuildAccessSnapshot(paged, nil)
	require.NoError(t, err)
	require.Empty(t, skipped)
	fold, err := access.NewFold(rows)
	require.NoError(t, err)
	assert.Equal(t, access.Allowed, fold.Decide("alice", "acme/roadmap", access.Update), "a paged fold lets the contractor edit")
}

// securityFaults is the real store with its security reads (the nodes and
// the version) made to stall (until their context ends) or fail.
type securityFaults struct {
	*memstore.Store
	stall   bool
	err     error
	entered chan struct{}
}

func (s *securityFaults) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	switch {
	case s.stall:
		s.entered <- struct{}{}
		<-ctx.Done()
		return mesh.SecuritySnapshot{}, ctx.Err()
	case s.err != nil:
		return mesh.SecuritySnapshot{}, s.err
	}
	return s.Store.SecurityNodes(ctx)
}

func (s *securityFaults) SecurityVersion(ctx context.Context) (mesh.SecurityVersion, error) {
	switch {
	case s.stall:
		s.entered <- struct{}{}
		<-ctx.Done()
		return mesh.SecurityVersion{}, ctx.Err()
	case s.err != nil:
		return mesh.SecurityVersion{}, s.err
	}
	return s.Store.SecurityVersion(ctx)
}

func TestAStalledFoldReadIsUndeterminedExactlyAtItsBudgetAndDenies(t *testing.T) {
	s := newSecurityStore(t)
	putNode(t, s, "acme/_Access/anna", AssignmentNodeType, assignment("anna", roleGrant{Role: access.RoleViewer}))
	clk := rxtest.NewClock()
	reader := &securityFaults{Store: s, entered: make(chan struct{}, 1)}
	fs := &FoldSource{Reader: reader, Clock: clk}
	ctx := context.Background()
	require.Equal(t, access.Allowed, fs.Decide(ctx, "anna", "acme/doc", access.Read), "negative control: the healthy read allows")

	reader.stall = true
	budget := mesh.DefaultBudgets().Permission
	waitStalled := func() {
		t.Helper()
		select {
		case <-reader.entered:
		case <-time.After(bound):
			require.FailNow(t, "the security read never started")
		}
	}

	folded := make(chan error, 1)
	go func() {
		_, err := fs.Fold(ctx)
		folded <- err
	}()
	waitStalled()
	clk.Advance(budget - time.Nanosecond)
	assert.Equal(t, 1, clk.Pending(), "not a moment early: the bound is still armed")
	clk.Advance(time.Nanosecond)
	select {
	case err := <-folded:
		var te *rx.TimeoutError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, StageAccessFold, te.Stage)
		assert.Equal(t, budget, te.After)
		assert.True(t, mesh.IsUnavailable(err))
	case <-time.After(bound):
		require.FailNow(t, "the bound did not end the wait")
	}

	decided := make(chan access.Decision, 1)
	go func() { decided <- fs.Decide(ctx, "anna", "acme/doc", access.Read) }()
	waitStalled()
	clk.Advance(budget)
	select {
	case d := <-decided:
		assert.Equal(t, access.Undetermined, d, "a cached fold is not served when the current version cannot be read")
		assert.False(t, d.Allows())
	case <-time.After(bound):
		require.FailNow(t, "the bound did not end the wait")
	}
}

func TestAFailingFoldReadIsUndeterminedAndAnswers503(t *testing.T) {
	s := newSecurityStore(t)
	putNode(t, s, "acme/_Access/anna", AssignmentNodeType, assignment("anna", roleGrant{Role: access.RoleViewer}))
	reader := &securityFaults{Store: s}
	fs := &FoldSource{Reader: reader}
	srv := server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch fs.Decide(r.Context(), "anna", "acme/doc", access.Read) {
		case access.Allowed:
			w.WriteHeader(http.StatusNoContent)
		case access.Denied:
			w.WriteHeader(http.StatusForbidden)
		default:
			WriteUndetermined(w, "the security nodes could not be read")
		}
	}))
	require.Equal(t, http.StatusNoContent, get(t, srv, "").status, "negative control: the healthy read allows")

	reader.err = &mesh.UnavailableError{Op: "read the security nodes", Err: errors.New("connection reset")}
	a := get(t, srv, "")
	assert.Equal(t, http.StatusServiceUnavailable, a.status, "never 403: a fault is not a deny")
	assert.Equal(t, "5", a.retryAfter)
	assert.Equal(t, StageAccessFold+": the security nodes could not be read", a.reason)

	require.NoError(t, s.Close())
	reader.err = nil
	assert.Equal(t, http.StatusServiceUnavailable, get(t, srv, "").status, "a closed store is unavailable too")
}

func TestTheFoldIsRebuiltOnlyWhenTheSecurityNodesChange(t *testing.T) {
	s := newSecurityStore(t)
	ctx := context.Background()
	putNode(t, s, "acme/_Access/anna", AssignmentNodeType, assignment("anna", roleGrant{Role: access.RoleViewer}))
	fs := &FoldSource{Reader: s}
	f1, err := fs.Fold(ctx)
	require.NoError(t, err)
	f2, err := fs.Fold(ctx)
	require.NoError(t, err)
	assert.Same(t, f1, f2, "the same version: the cached fold")
	putNode(t, s, "acme/Docs/readme", "Article", map[string]any{"text": "hi"})
	f3, err := fs.Fold(ctx)
	require.NoError(t, err)
	assert.Same(t, f1, f3, "a write of another type does not change the version")

	putNode(t, s, "acme/_Access/bob", AssignmentNodeType, assignment("bob", roleGrant{Role: access.RoleViewer}))
	f4, err := fs.Fold(ctx)
	require.NoError(t, err)
	assert.NotSame(t, f1, f4, "a security write: a new fold")
	assert.Equal(t, access.Allowed, f4.Decide("bob", "acme/doc", access.Read))
}

func TestASecurityNodeThatCannotBeReadFailsClosedAsFarAsItCouldReach(t *testing.T) {
	ctx := context.Background()
	base := func(t *testing.T) (*memstore.Store, *FoldSource) {
		s := newSecurityStore(t)
		putNode(t, s, "_Access/everyone", AssignmentNodeType, assignment("anna", roleGrant{Role: access.RoleViewer}))
		return s, &FoldSource{Reader: s}
	}
	t.Run("an assignment: its scope is undetermined, the rest is decided", func(t *testing.T) {
		s, fs := base(t)
		putNode(t, s, "acme/_Access/broken", AssignmentNodeType, map[string]any{"subject": "", "roles": []roleGrant{{Role: "Viewer", Denied: true}}})
		assert.Equal(t, access.Undetermined, fs.Decide(ctx, "anna", "acme/doc", access.Read), "the broken node might have been a deny")
		assert.Equal(t, access.Allowed, fs.Decide(ctx, "anna", "beta/doc", access.Read))
		require.NoError(t, s.Delete(ctx, "acme/_Access/broken"))
		assert.Equal(t, access.Allowed, fs.Decide(ctx, "anna", "acme/doc", access.Read), "negative control: without it, decided")
	})
	t.Run("a policy: its scope is undetermined", func(t *testing.T) {
		s, fs := base(t)
		putNode(t, s, "acme/_Policy", PolicyNodeType, map[string]any{"read": "no"})
		assert.Equal(t, access.Undetermined, fs.Decide(ctx, "anna", "acme/doc", access.Read))
		assert.Equal(t, access.Allowed, fs.Decide(ctx, "anna", "beta/doc", access.Read))
	})
	t.Run("a membership: everything is undetermined", func(t *testing.T) {
		s, fs := base(t)
		putNode(t, s, "Org/Groups/x/anna", MembershipNodeType, map[string]any{"member": "anna", "groups": "x"})
		assert.Equal(t, access.Undetermined, fs.Decide(ctx, "anna", "beta/doc", access.Read))
		_, err := fs.Fold(ctx)
		var nodeErr *SecurityNodeError
		require.ErrorAs(t, err, &nodeErr)
		assert.Equal(t, "Org/Groups/x/anna", nodeErr.Path)
	})
	t.Run("a role: left out, so it grants nothing", func(t *testing.T) {
		s, fs := base(t)
		putNode(t, s, "acme/_Access/auditor", AssignmentNodeType, assignment("anna", roleGrant{Role: "Auditor"}))
		putNode(t, s, "acme/Roles/Auditor", RoleNodeType, map[string]any{"permissions": []string{"Export", "Teleport"}})
		assert.Equal(t, access.Denied, fs.Decide(ctx, "anna", "acme/doc", access.Export))
		assert.Equal(t, access.Allowed, fs.Decide(ctx, "anna", "acme/doc", access.Read), "the rest is decided")
		putNode(t, s, "acme/Roles/Auditor", RoleNodeType, map[string]any{"permissions": []string{"Export"}})
		assert.Equal(t, access.Allowed, fs.Decide(ctx, "anna", "acme/doc", access.Export), "negative control: readable, it grants")
	})
}

func TestAGlobalAdminIsAnAdminAtTheAdminScope(t *testing.T) {
	s := newSecurityStore(t)
	ctx := context.Background()
	putNode(t, s, "Admin/_Access/ops", AssignmentNodeType, assignment("ops", roleGrant{Role: access.RoleAdmin}))
	putNode(t, s, "Admin/_Access/eve", AssignmentNodeType, assignment("eve", roleGrant{Role: access.RoleEditor}))
	putNode(t, s, "acme/_Access/carl", AssignmentNodeType, assignment("carl", roleGrant{Role: access.RoleAdmin}))
	fs := &FoldSource{Reader: s}
	assert.Equal(t, access.Allowed, fs.IsGlobalAdmin(ctx, "ops"))
	assert.Equal(t, access.Denied, fs.IsGlobalAdmin(ctx, "eve"), "an editor at Admin is not an admin")
	assert.Equal(t, access.Denied, fs.IsGlobalAdmin(ctx, "carl"), "an admin elsewhere is not a global admin")
	assert.Equal(t, access.Denied, fs.IsGlobalAdmin(ctx, "admin"))
	// Negative control for that last line: by the fold's own-partition rule
	// alone, a user called "admin" holds Admin at Admin (FoldSource.Decide
	// refuses it too: TestAUserNamedAfterTheAdminPartitionHoldsNothingInIt).
	f, err := fs.Fold(ctx)
	require.NoError(t, err)
	assert.Equal(t, access.Allowed, f.Decide("admin", GlobalAdminScope, access.All|access.Compile))

	failing := &FoldSource{Reader: &securityFaults{Store: s, err: errors.New("down")}}
	assert.Equal(t, access.Undetermined, failing.IsGlobalAdmin(ctx, "ops"))
}

func TestAStalledFoldReadIsBoundedOnAPlainMockClockToo(t *testing.T) {
	s := newSecurityStore(t)
	mock := clock.NewMock()
	reader := &securityFaults{Store: s, stall: true, entered: make(chan struct{}, 1)}
	fs := &FoldSource{Reader: reader, Clock: mock}
	decided := make(chan access.Decision, 1)
	go func() { decided <- fs.Decide(context.Background(), "anna", "acme/doc", access.Read) }()
	select {
	case <-reader.entered:
	case <-time.After(bound):
		require.FailNow(t, "the security read never started")
	}
	mock.Add(mesh.DefaultBudgets().Permission)
	select {
	case d := <-decided:
		assert.Equal(t, access.Undetermined, d)
	case <-time.After(bound):
		require.FailNow(t, "the mock's timer did not end the wait")
	}
}
