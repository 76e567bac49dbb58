package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// decisionStore is a store that gates DecisionTypes, as a user wraps one:
// its point reads counted and, where a test says so, its security version
// frozen (a versioner that does not move on the writes an authentication
// reads: the negative control) or failing.
type decisionStore struct {
	mesh.Store
	gets         atomic.Int64
	versionReads atomic.Int64                         // SecurityVersion calls
	frozenAt     atomic.Pointer[mesh.SecurityVersion] // when set, SecurityVersion answers it: the version it had when frozen
	failVersion  atomic.Bool
	stallVersion atomic.Bool // SecurityVersion waits for its context to end
	stallGets    atomic.Bool // every Get never answers
	entered      chan string // told the path of each stalled Get as it is subscribed (its bound is armed by then)
}

func (s *decisionStore) Get(path string) rx.Observable[mesh.Node] {
	s.gets.Add(1)
	if s.stallGets.Load() {
		return rx.Defer(func() rx.Observable[mesh.Node] {
			select {
			case s.entered <- path:
			default:
			}
			return rx.Never[mesh.Node]()
		})
	}
	return s.Store.Get(path)
}

func (s *decisionStore) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	return s.Store.(mesh.SecurityReader).SecurityNodes(ctx)
}

func (s *decisionStore) SecurityVersion(ctx context.Context) (mesh.SecurityVersion, error) {
	s.versionReads.Add(1)
	switch {
	case s.failVersion.Load():
		return mesh.SecurityVersion{}, errors.New("the version row could not be read")
	case s.stallVersion.Load():
		<-ctx.Done()
		return mesh.SecurityVersion{}, ctx.Err()
	}
	if v := s.frozenAt.Load(); v != nil {
		return *v, nil
	}
	return s.Store.(mesh.SecurityVersioner).SecurityVersion(ctx)
}

func (s *decisionStore) freeze(t testing.TB) {
	v, err := s.Store.(mesh.SecurityVersioner).SecurityVersion(context.Background())
	require.NoError(t, err)
	s.frozenAt.Store(&v)
}

// decisionFixture is fixture's instance, key, grant and ladder on a
// memstore that gates DecisionTypes (or only SecurityTypes, when !gated).
func decisionFixture(t testing.TB, gated bool) (*fixture, *decisionStore, *Authenticator) {
	t.Helper()
	clk := rxtest.NewClock()
	types := SecurityTypes()
	if gated {
		types = append(types, DecisionTypes()...)
	}
	mem, err := memstore.New(memstore.Options{Clock: clk, GatedTypes: types})
	require.NoError(t, err)
	t.Cleanup(func() { _ = mem.Close() })
	store := &decisionStore{Store: mem, entered: make(chan string, 16)}
	f := &fixture{clk: clk, reg: &Instances{Mesh: store, Clock: clk}}
	ctx := context.Background()
	for _, tier := range []PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 2}, {ID: "enterprise", Rank: 3, AllAccess: true}} {
		require.NoError(t, f.reg.SetPlanTier(ctx, tier))
	}
	_, err = f.reg.Register(ctx, "acme", "Acme Corp", "pro")
	require.NoError(t, err)
	f.key, err = f.reg.IssueKey(ctx, "acme")
	require.NoError(t, err)
	_, err = f.reg.SetGrant(ctx, "acme", "ops@example.com", "Plugins/*@pro")
	require.NoError(t, err)
	a := &Authenticator{Mesh: store, Clock: clk, Ladder: &PlanTierLadder{Mesh: store, Clock: clk}}
	return f, store, a
}

// authenticateAsTheRegistry authenticates header as the registry does:
// AuthenticateNow, and the stream when it did not answer.
func authenticateAsTheRegistry(t testing.TB, a *Authenticator, header string) Result {
	t.Helper()
	res, legs := a.AuthenticateNow(t.Context(), header, DefaultReadBudget)
	if legs == nil {
		return res
	}
	return first(t, legs)
}

// decideNow is AuthenticateNow's answer when it decided on the caller's
// goroutine: ok is false when it returned the legs' stream instead.
func decideNow(ctx context.Context, a *Authenticator, header string, within time.Duration) (res Result, ok bool) {
	res, legs := a.AuthenticateNow(ctx, header, within)
	return res, legs == nil
}

// Every change to what a key may do is honoured by the first
// authentication that starts after the change is written, although a warm
// key is answered from its kept decision without reading its instance or
// grant: a key revoked, revoked with its index node left behind, an
// instance disabled, a grant narrowed, a key rotated away, the instance's
// plan lowered. Each case authenticates the key three times first and
// checks that the kept decision was in use (no point read at all), as the
// registry authenticates (AuthenticateNow, then its legs when it returned
// them).
// Negative control: the same sequence on a store whose security version
// does not move on these writes keeps accepting the key after each change
// (a kept decision is exactly as fresh as the version it was kept at).
func TestAKeptDecisionIsNotUsedByTheFirstAuthenticationAfterAWriteToWhatItRead(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		change func(t *testing.T, f *fixture)
		check  func(res Result) bool // holds after the change
	}{
		{"revoked", func(t *testing.T, f *fixture) { require.NoError(t, f.reg.RevokeKey(ctx, "acme", f.key)) },
			func(res Result) bool { return !res.Authenticated() && res.Refused != "" }},
		{"revoked, index node left", func(t *testing.T, f *fixture) {
			_, err := f.reg.update(ctx, "acme", func(inst *Instance) error { inst.KeyHashes = nil; return nil })
			require.NoError(t, err)
		}, func(res Result) bool { return !res.Authenticated() && res.Refused == RefusedRevokedKey }},
		{"disabled", func(t *testing.T, f *fixture) { require.NoError(t, f.reg.Disable(ctx, "acme")) },
			func(res Result) bool { return !res.Authenticated() && res.Refused == RefusedDisabled }},
		{"grant narrowed", func(t *testing.T, f *fixture) {
			_, err := f.reg.SetGrant(ctx, "acme", "ops@example.com", "Other/*")
			require.NoError(t, err)
		}, func(res Result) bool {
			return res.Authenticated() && !res.Allows("Plugins", "charts", "pro") && res.Allows("Other", "x", "")
		}},
		{"rotated", func(t *testing.T, f *fixture) {
			_, err := f.reg.RotateKey(ctx, "acme")
			require.NoError(t, err)
		}, func(res Result) bool { return !res.Authenticated() }},
		{"plan lowered", func(t *testing.T, f *fixture) {
			_, err := f.reg.update(ctx, "acme", func(inst *Instance) error { inst.Plan = "free"; return nil })
			require.NoError(t, err)
		}, func(res Result) bool { return res.Authenticated() && !res.Allows("Plugins", "charts", "pro") }},
	}
	ways := []struct {
		name         string
		authenticate func(t testing.TB, a *Authenticator, header string) Result
	}{
		{"AuthenticateNow first", authenticateAsTheRegistry},
	}
	for _, c := range cases {
		for _, way := range ways {
			t.Run(c.name+"/"+way.name, func(t *testing.T) {
				for _, control := range []bool{false, true} {
					f, store, a := decisionFixture(t, true)
					for range 3 {
						res := way.authenticate(t, a, bearer(f.key))
						require.True(t, res.Authenticated() && res.Allows("Plugins", "charts", "pro"), "%+v", res)
					}
					before := store.gets.Load()
					way.authenticate(t, a, bearer(f.key))
					require.Zero(t, store.gets.Load()-before, "a warm key is answered from its kept decision: no point read")
					if control {
						store.freeze(t)
					}
					c.change(t, f)
					res := way.authenticate(t, a, bearer(f.key))
					if control {
						assert.False(t, c.check(res), "negative control: a version that does not move keeps the old decision (%+v)", res)
						continue
					}
					assert.True(t, c.check(res), "the first authentication after the change: %+v", res)
				}
			})
		}
	}
}

// The decision an Authenticator keeps is read again whenever its version
// cannot be read, and only for a key that authenticated: an unknown key is
// not kept; a version read that fails sends every request through its legs
// (a stalled instance read then answers unavailable, naming the leg: the
// kept decision is not a fallback for a store that cannot answer); and a
// store that gates only the access fold's types keeps nothing (every warm
// request reads its instance and grant, as before). Control: with the
// version readable, the same stalled reads are not needed and the key
// authenticates.
func TestAKeptDecisionIsUsedOnlyAtAVersionReadNowAndOnlyForAKeyThatAuthenticated(t *testing.T) {
	f, store, a := decisionFixture(t, true)
	unknown := strings.Replace(f.key, f.key[len(f.key)-4:], "zzzz", 1)
	assert.False(t, authenticateAsTheRegistry(t, a, bearer(unknown)).Authenticated())
	assert.Empty(t, a.decisions.kept, "an unknown key is not kept")

	for range 2 { // the first reads no version (an unknown key reads none); the second keeps
		require.True(t, authenticateAsTheRegistry(t, a, bearer(f.key)).Authenticated())
	}
	require.Len(t, a.decisions.kept, 1)
	store.stallGets.Store(true)
	res, ok := decideNow(t.Context(), a, bearer(f.key), DefaultReadBudget)
	require.True(t, ok, "control: at the kept version no leg is read")
	require.True(t, res.Authenticated())

	store.failVersion.Store(true)
	_, ok = decideNow(t.Context(), a, bearer(f.key), DefaultReadBudget)
	assert.False(t, ok, "a version that cannot be read decides nothing at once")
	done := make(chan Result, 1)
	go func() { done <- first(t, a.Authenticate(bearer(f.key))) }()
	select {
	case <-store.entered: // the instance leg's bound is armed
	case <-time.After(bound):
		require.FailNow(t, "the instance leg was never read")
	}
	f.clk.Advance(DefaultReadBudget)
	select {
	case res = <-done:
	case <-time.After(bound):
		require.FailNow(t, "the stalled leg was not bounded")
	}
	assert.False(t, res.Authenticated())
	assert.True(t, strings.HasPrefix(res.Unavailable, StageInstance+": "), "the stalled leg is named: %+v", res)

	g, gstore, ga := decisionFixture(t, false)
	for range 3 {
		require.True(t, first(t, ga.Authenticate(bearer(g.key))).Authenticated())
	}
	before := gstore.gets.Load()
	_, ok = decideNow(t.Context(), ga, bearer(g.key), DefaultReadBudget)
	assert.False(t, ok, "a store that does not gate DecisionTypes: nothing is decided at once")
	require.True(t, first(t, ga.Authenticate(bearer(g.key))).Authenticated())
	assert.EqualValues(t, 2, gstore.gets.Load()-before, "its warm key reads its instance and grant")
	assert.Empty(t, ga.decisions.kept)
}

// A header without a well-formed key is answered at once by
// AuthenticateNow, refused, reading nothing, on any store. Control: a
// well-formed key on a store that keeps no decisions is not answered at
// once.
func TestAuthenticateNowRefusesAMissingKeyAtOnceWithoutARead(t *testing.T) {
	f, store, a := decisionFixture(t, false)
	before := store.gets.Load()
	for _, h := range []string{"", "Bearer nope", "Basic !!"} {
		res, ok := decideNow(t.Context(), a, h, DefaultReadBudget)
		require.True(t, ok, "%q", h)
		assert.False(t, res.Authenticated())
		assert.Empty(t, res.Unavailable)
	}
	assert.Zero(t, store.gets.Load()-before)
	_, ok := decideNow(t.Context(), a, bearer(f.key), DefaultReadBudget)
	assert.False(t, ok, "control")
}

// Kept decisions are bounded in number (memoEntries) and in the bytes of
// what they hold (memoBytes; one larger than memoNodeBytes is not kept).
// Control: under the bounds every decision is kept.
func TestKeptDecisionsAreBoundedInNumberAndBytes(t *testing.T) {
	var c decisionCache
	inst := &Instance{ID: "acme", Plan: "pro", KeyHashes: []string{strings.Repeat("a", 64)}}
	for i := range 3 * memoEntries {
		d := keyDigest(fmt.Sprint(i))
		c.keep(&d, mesh.SecurityVersion{Seq: 1}, inst, PluginGrant{InstanceID: "acme"})
		if i == memoEntries-1 {
			require.Len(t, c.kept, memoEntries, "control: every decision under the bound is kept")
		}
	}
	assert.Len(t, c.kept, memoEntries)

	var b decisionCache
	big := PluginGrant{InstanceID: "acme", Entries: make([]GrantEntry, 1000)}
	for i := range memoEntries {
		d := keyDigest(fmt.Sprint(i))
		b.keep(&d, mesh.SecurityVersion{Seq: 1}, inst, big)
	}
	assert.LessOrEqual(t, b.bytes, memoBytes)
	total := 0
	for _, d := range b.kept {
		total += d.bytes
	}
	assert.Equal(t, total, b.bytes, "the count follows what is kept")
	huge := PluginGrant{InstanceID: "acme", Entries: make([]GrantEntry, memoNodeBytes/64+1)}
	d := keyDigest("huge")
	b.keep(&d, mesh.SecurityVersion{Seq: 1}, inst, huge)
	_, ok := b.kept[d]
	assert.False(t, ok, "a decision larger than memoNodeBytes is not kept")
}

// On PostgreSQL, replicas share one security version: a key revoked through
// one replica is refused by the first authentication on another replica
// that had kept its decision. Negative control: the same replica behind a
// version that does not move keeps accepting the key.
func TestOnPostgreSQLAKeyRevokedThroughOneReplicaIsRefusedByTheNextAuthenticationOnAnother(t *testing.T) {
	url := pg.Database(t)
	open := func() *pgstore.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := pgstore.Open(ctx, url, pgstore.Options{GatedTypes: append(SecurityTypes(), DecisionTypes()...)})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	one, other := open(), open()
	ctx := t.Context()
	admin := &Instances{Mesh: other}
	require.NoError(t, admin.SetPlanTier(ctx, PlanTier{ID: "pro", Rank: 1}))
	for _, control := range []bool{false, true} {
		id := fmt.Sprint("acme", control)
		_, err := admin.Register(ctx, id, "Acme", "pro")
		require.NoError(t, err)
		key, err := admin.IssueKey(ctx, id)
		require.NoError(t, err)
		_, err = admin.SetGrant(ctx, id, "ops", "Plugins/*")
		require.NoError(t, err)

		store := &decisionStore{Store: one}
		a := &Authenticator{Mesh: store, Ladder: &PlanTierLadder{Mesh: store}}
		for range 3 {
			require.True(t, authenticateAsTheRegistry(t, a, bearer(key)).Authenticated())
		}
		_, ok := decideNow(ctx, a, bearer(key), DefaultReadBudget)
		require.True(t, ok, "the key's decision is kept")
		if control {
			store.freeze(t)
		}
		require.NoError(t, admin.RevokeKey(ctx, id, key))
		res := authenticateAsTheRegistry(t, a, bearer(key))
		if control {
			assert.True(t, res.Authenticated(), "negative control: a version that does not move keeps the revoked key")
			continue
		}
		assert.False(t, res.Authenticated(), "the first authentication on the other replica: %+v", res)
		assert.Equal(t, RefusedUnknownKey, res.Refused)
	}
}

// AuthenticateNow waits for a version read that does not answer no longer
// than within (a caller's budget shorter than ReadBudget), and then decides
// nothing; within <= 0 reads nothing. Control: just before within it is
// still waiting.
func TestAuthenticateNowWaitsForTheVersionNoLongerThanWithin(t *testing.T) {
	f, store, a := decisionFixture(t, true)
	for range 2 {
		require.True(t, authenticateAsTheRegistry(t, a, bearer(f.key)).Authenticated())
	}
	_, ok := decideNow(t.Context(), a, bearer(f.key), 0)
	assert.False(t, ok, "no time left: nothing read, nothing decided")

	store.stallVersion.Store(true)
	const within = time.Second
	done := make(chan bool, 1)
	go func() {
		_, ok := decideNow(t.Context(), a, bearer(f.key), within)
		done <- ok
	}()
	require.NoError(t, f.clk.BlockUntil(1, bound), "the version read's bound is armed")
	f.clk.Advance(within - time.Millisecond)
	select {
	case <-done:
		require.FailNow(t, "control: the wait ended before within")
	default:
	}
	f.clk.Advance(time.Millisecond)
	select {
	case ok := <-done:
		assert.False(t, ok, "a version that was not read in time decides nothing")
	case <-time.After(bound):
		require.FailNow(t, "the version read outlasted within")
	}
}
