package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/rx"
)

// versionRow reads or writes PostgreSQL's security version row directly, as
// a restore of a dump does: the row is copied in (deleted and inserted),
// not updated, so no trigger of the store draws it a fresh token.
type versionRow struct{ conn *pgx.Conn }

func openVersionRow(t *testing.T, url string) versionRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return versionRow{conn}
}

func (r versionRow) read(t *testing.T) mesh.SecurityVersion {
	t.Helper()
	var v mesh.SecurityVersion
	require.NoError(t, r.conn.QueryRow(t.Context(), `SELECT version, token FROM public.security_fold_version`).Scan(&v.Seq, &v.Token))
	return v
}

func (r versionRow) restore(t *testing.T, v mesh.SecurityVersion) {
	t.Helper()
	_, err := r.conn.Exec(t.Context(), `DELETE FROM public.security_fold_version`)
	require.NoError(t, err)
	_, err = r.conn.Exec(t.Context(), `INSERT INTO public.security_fold_version (singleton, version, token) VALUES (true, $1, $2)`, v.Seq, v.Token)
	require.NoError(t, err)
}

func openGated(t *testing.T, url string, gated []string) *pgstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, url, pgstore.Options{GatedTypes: gated})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// On PostgreSQL, a security version counter that comes back with other
// contents does not bring back a decision kept at it. The reviewer's probe:
// the version row of a dump (counter N) is restored after the key's
// decision was kept at N+1, and the key is then revoked, which makes the
// counter N+1 again. The counter alone would match the kept decision (the
// test checks that it does: the scenario is real), and the revoked key
// would authenticate; the version's token, drawn afresh by the revocation,
// does not match, so the legs run and refuse the key.
// Negative control (run): with decisionCache.decided comparing only
// version.Seq, the last authentication answered the kept decision and the
// test failed at "the revoked key is refused".
func TestOnPostgreSQLARestoredVersionCounterDoesNotBringAKeptDecisionBack(t *testing.T) {
	url := pg.Database(t)
	s := openGated(t, url, append(SecurityTypes(), DecisionTypes()...))
	row := openVersionRow(t, url)
	ctx := t.Context()
	admin := &Instances{Mesh: s}
	require.NoError(t, admin.SetPlanTier(ctx, PlanTier{ID: "pro", Rank: 1}))
	_, err := admin.Register(ctx, "acme", "Acme", "pro")
	require.NoError(t, err)
	key, err := admin.IssueKey(ctx, "acme")
	require.NoError(t, err)

	dump := row.read(t) // the backup: counter N
	_, err = s.Put(ctx, mesh.Node{Path: "acme/_Access/r", NodeType: mesh.RoleType, Content: json.RawMessage(`{}`)})
	require.NoError(t, err) // an unrelated gated write: N+1
	store := &decisionStore{Store: s}
	a := &Authenticator{Mesh: store}
	for range 2 {
		require.True(t, authenticateAsTheRegistry(t, a, bearer(key)).Authenticated())
	}
	_, ok := decideNow(ctx, a, bearer(key), DefaultReadBudget)
	require.True(t, ok, "the key's decision is kept at N+1")
	kept := row.read(t)
	require.Equal(t, dump.Seq+1, kept.Seq)

	row.restore(t, dump)
	// The revocation, one write of the instance: N+1 again, other contents.
	_, err = admin.update(ctx, "acme", func(inst *Instance) error { inst.KeyHashes = nil; return nil })
	require.NoError(t, err)
	now := row.read(t)
	require.Equal(t, kept.Seq, now.Seq, "control: the counter recurred, so a counter alone would match the kept decision")
	assert.NotEqual(t, kept.Token, now.Token, "the revocation drew a fresh token")

	_, ok = decideNow(ctx, a, bearer(key), DefaultReadBudget)
	assert.False(t, ok, "the kept decision does not answer at the recurred counter")
	res := authenticateAsTheRegistry(t, a, bearer(key))
	assert.False(t, res.Authenticated(), "the revoked key is refused: %+v", res)
	assert.Equal(t, RefusedRevokedKey, res.Refused)
}

// The access fold cache keys on the same version: on PostgreSQL, a fold
// built at counter N+1 is not served after the version row of a dump
// (counter N) is restored and a deny is written, which makes the counter
// N+1 again with other contents. Negative control (run): with
// FoldSource.warm comparing only version.Seq, the deny was not seen and
// the test failed at "the deny decides".
func TestOnPostgreSQLARestoredVersionCounterDoesNotBringAKeptFoldBack(t *testing.T) {
	url := pg.Database(t)
	s := openGated(t, url, nil)
	row := openVersionRow(t, url)
	ctx := t.Context()
	putNode(t, s, "Org/Memberships/alice", MembershipNodeType, map[string]any{"member": "alice", "groups": []string{"team-7"}})
	dump := row.read(t)
	putNode(t, s, "acme/_Access/team-7", AssignmentNodeType, assignment("team-7", roleGrant{Role: access.RoleEditor}))
	fs := &FoldSource{Reader: s}
	require.Equal(t, access.Allowed, fs.Decide(ctx, "alice", "acme/roadmap", access.Update))
	kept := row.read(t)
	require.Equal(t, dump.Seq+1, kept.Seq)

	row.restore(t, dump)
	putNode(t, s, "acme/_Access/alice-deny", AssignmentNodeType, assignment("alice", roleGrant{Role: access.RoleEditor, Denied: true}))
	require.Equal(t, kept.Seq, row.read(t).Seq, "control: the counter recurred")
	assert.Equal(t, access.Denied, fs.Decide(ctx, "alice", "acme/roadmap", access.Update), "the deny decides")
}

// failover is a store a user wraps around two: it reads the one current now,
// as a failover to a standby does. What it serves is the current store's.
type failover struct {
	mesh.Store // the first: writes in the test go to each store directly
	cur        atomic.Pointer[mesh.Store]
}

func (f *failover) store() mesh.Store                        { return *f.cur.Load() }
func (f *failover) Get(path string) rx.Observable[mesh.Node] { return f.store().Get(path) }
func (f *failover) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	return f.store().(mesh.SecurityReader).SecurityNodes(ctx)
}
func (f *failover) SecurityVersion(ctx context.Context) (mesh.SecurityVersion, error) {
	return f.store().(mesh.SecurityVersioner).SecurityVersion(ctx)
}

// In memory, two stores never share a version, whatever their counters: an
// Authenticator whose store fails over to another (a standby holding the
// same key, revoked there) at the very counter its decision was kept at
// does not answer from that decision. Negative control (run): with
// decisionCache.decided comparing only version.Seq, the revoked key
// authenticated on the standby and the test failed at "refused".
func TestInMemoryAStoreAtTheSameCounterIsNotTheVersionADecisionWasKeptAt(t *testing.T) {
	ctx := t.Context()
	f, primary, _ := decisionFixture(t, true)
	_, standby, _ := decisionFixture(t, true)
	// The standby holds the key too (its index node and its instance's key
	// list), revoked there.
	hash := HashKey(f.key)
	for _, p := range []string{KeyIndexPath(hash), InstancePath("acme")} {
		n := first(t, primary.Store.Get(p))
		_, err := standby.Store.Put(ctx, mesh.Node{Path: n.Path, NodeType: n.NodeType, Name: n.Name, Content: n.Content})
		require.NoError(t, err)
	}
	standbyAdmin := &Instances{Mesh: standby.Store, Clock: f.clk}
	require.NoError(t, standbyAdmin.RevokeKey(ctx, "acme", f.key))
	seq := func(s mesh.Store) int64 {
		v, err := s.(mesh.SecurityVersioner).SecurityVersion(ctx)
		require.NoError(t, err)
		return v.Seq
	}
	// Bring the counters level with gated writes.
	for i := 0; seq(primary.Store) != seq(standby.Store); i++ {
		lower := primary.Store
		if seq(standby.Store) < seq(primary.Store) {
			lower = standby.Store
		}
		_, err := lower.Put(ctx, mesh.Node{Path: fmt.Sprintf("acme/_Access/pad%d", i), NodeType: mesh.RoleType})
		require.NoError(t, err)
	}

	fo := &failover{Store: primary.Store}
	fo.cur.Store(&primary.Store)
	a := &Authenticator{Mesh: fo, Clock: f.clk}
	for range 2 {
		require.True(t, authenticateAsTheRegistry(t, a, bearer(f.key)).Authenticated())
	}
	_, ok := decideNow(ctx, a, bearer(f.key), DefaultReadBudget)
	require.True(t, ok, "the key's decision is kept on the primary")

	fo.cur.Store(&standby.Store)
	require.Equal(t, seq(primary.Store), seq(standby.Store), "control: the standby is at the counter the decision was kept at")
	res := authenticateAsTheRegistry(t, a, bearer(f.key))
	assert.False(t, res.Authenticated(), "the key revoked on the standby is refused: %+v", res)
	assert.NotEmpty(t, res.Refused, "refused")
}

// A node of a type the store does not gate, written where a decision's
// legs read (a grant path with no grant), moves no security version; the
// legs read only nodes of their own type, so the kept answer is still the
// answer the legs give. Negative control (run): with readLeg decoding any
// node at the path, the legs answered "grant: ... has node type" (503)
// while the kept decision answered the empty grant, and the test failed at
// "the kept answer is the legs' answer".
func TestAnUngatedNodeAtAGrantPathLeavesTheKeptAnswerEqualToTheLegs(t *testing.T) {
	ctx := t.Context()
	f, store, a := decisionFixture(t, true)
	_, err := f.reg.Register(ctx, "solo", "Solo", "pro") // no grant
	require.NoError(t, err)
	key, err := f.reg.IssueKey(ctx, "solo")
	require.NoError(t, err)
	for range 2 {
		require.True(t, authenticateAsTheRegistry(t, a, bearer(key)).Authenticated())
	}
	before, err := store.Store.(mesh.SecurityVersioner).SecurityVersion(ctx)
	require.NoError(t, err)

	// A grant's content, in a node of an ungated type, where solo's grant
	// would be.
	grant := first(t, store.Store.Get(GrantPath("acme")))
	_, err = store.Store.Put(ctx, mesh.Node{Path: GrantPath("solo"), NodeType: "Note", Name: "solo", Content: grant.Content})
	require.NoError(t, err)
	after, err := store.Store.(mesh.SecurityVersioner).SecurityVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, before, after, "control: the write moved no version, so the kept decision answers")

	kept, ok := decideNow(ctx, a, bearer(key), DefaultReadBudget)
	require.True(t, ok)
	legs := first(t, a.Authenticate(bearer(key)))
	assert.Equal(t, legs.Unavailable, kept.Unavailable, "the kept answer is the legs' answer")
	assert.Equal(t, legs.Authenticated(), kept.Authenticated(), "the kept answer is the legs' answer")
	assert.Equal(t, legs.Grant.Entries, kept.Grant.Entries, "the kept answer is the legs' answer")
	assert.Empty(t, kept.Grant.Entries)
}

// One authentication reads the security version at most once, on the
// caller's context, bounded by ReadBudget on the Authenticator's clock: a
// key whose kept decision is at another version reads it once, then its
// instance and grant; an unknown key (or a key not yet seen) reads no
// version at all, only its index node, as without kept decisions; a
// stalled version read ends with the caller's context, and the legs then
// run without waiting for it again; a stalled read with a live context
// waits for ReadBudget once. Negative control (run): with the legs' stream
// reading the version again on context.Background() (as 153d556 did), the
// unseen and unknown keys counted a version read each, the miss counted 2,
// and the stalled read past the caller's context was not answered within
// the bound.
func TestAnAuthenticationReadsTheSecurityVersionOnceOnTheCallersContext(t *testing.T) {
	ctx := t.Context()
	f, store, a := decisionFixture(t, true)
	reads := func(do func()) (versions, gets int64) {
		v0, g0 := store.versionReads.Load(), store.gets.Load()
		do()
		return store.versionReads.Load() - v0, store.gets.Load() - g0
	}

	versions, gets := reads(func() { require.True(t, authenticateAsTheRegistry(t, a, bearer(f.key)).Authenticated()) })
	assert.Zero(t, versions, "a key not seen before reads no version")
	assert.EqualValues(t, 3, gets, "its index node, instance and grant")

	unknown := bearer(f.key[:len(f.key)-4] + "zzzz")
	for range 2 {
		versions, gets = reads(func() { require.False(t, authenticateAsTheRegistry(t, a, unknown).Authenticated()) })
		assert.Zero(t, versions, "an unknown key reads no version")
		assert.EqualValues(t, 1, gets, "an unknown key reads its index node only")
	}

	require.True(t, authenticateAsTheRegistry(t, a, bearer(f.key)).Authenticated()) // kept now
	_, err := f.reg.SetGrant(ctx, "acme", "ops@example.com", "Plugins/*@pro", "Other/*")
	require.NoError(t, err) // the version moves: a miss
	versions, gets = reads(func() { require.True(t, authenticateAsTheRegistry(t, a, bearer(f.key)).Authenticated()) })
	assert.EqualValues(t, 1, versions, "a miss reads the version once")
	assert.EqualValues(t, 2, gets, "then its instance and grant")
	versions, gets = reads(func() { require.True(t, authenticateAsTheRegistry(t, a, bearer(f.key)).Authenticated()) })
	assert.EqualValues(t, 1, versions, "a hit reads the version once")
	assert.Zero(t, gets, "and nothing else")

	// A stalled version read ends with the caller's context; the legs run
	// without reading it again (no Advance of the clock anywhere here).
	_, err = f.reg.SetGrant(ctx, "acme", "ops@example.com", "Plugins/*@pro")
	require.NoError(t, err)
	store.stallVersion.Store(true)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	done := make(chan Result, 1)
	go func() {
		_, legs := a.AuthenticateNow(gone, bearer(f.key), DefaultReadBudget)
		done <- first(t, legs)
	}()
	select {
	case res := <-done:
		assert.True(t, res.Authenticated(), "the legs decide: %+v", res)
	case <-time.After(bound):
		require.FailNow(t, "a version read past its caller's context")
	}

	// With a live context it waits ReadBudget once, then the legs run.
	versions, _ = reads(func() {
		go func() {
			_, legs := a.AuthenticateNow(ctx, bearer(f.key), DefaultReadBudget)
			done <- first(t, legs)
		}()
		require.NoError(t, f.clk.BlockUntil(1, bound), "the version read's bound is armed")
		f.clk.Advance(DefaultReadBudget)
		select {
		case res := <-done:
			assert.True(t, res.Authenticated(), "the legs decide: %+v", res)
		case <-time.After(bound):
			require.FailNow(t, "the authentication waited for the version more than once")
		}
	})
	assert.EqualValues(t, 1, versions)
}
