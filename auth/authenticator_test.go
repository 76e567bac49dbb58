package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func bearer(key string) string { return "Bearer " + key }

func TestAMissingOrMalformedKeyIsRefusedSynchronouslyWithoutAMeshReadOrATimer(t *testing.T) {
	f := newFixture(t)
	a := f.authenticator(nil)
	scheduledBefore := f.clk.Scheduled() // the fixture's own registry reads
	for _, header := range []string{
		"",
		"Bearer",
		"Bearer mwi_tooShort",
		"Bearer " + strings.Repeat("x", 47),
		"Basic !!!not-base64",
		"Token " + f.key,
		strings.Repeat("B", 4096),
	} {
		rec := rxtest.NewRecorder[Result](f.clk)
		a.Authenticate(header).Subscribe(rec)
		// No Advance and no wait: the answer is there when Subscribe returns.
		require.True(t, rec.Completed(), "header %q: answered inside Subscribe", header)
		assert.Equal(t, []Result{{}}, rec.Values(), "header %q: unauthenticated", header)
	}
	assert.Zero(t, f.store.reads(), "the fast path reads nothing from the mesh")
	assert.Zero(t, f.clk.Pending(), "and arms no timer")
	assert.Equal(t, scheduledBefore, f.clk.Scheduled(), "not even one it disarms again")

	// Negative control: a well-formed key, even an unknown one, reads the
	// mesh under a bound; the counters above would have seen it.
	unknown, err := NewKey()
	require.NoError(t, err)
	rec := rxtest.Record(f.clk, a.Authenticate(bearer(unknown)))
	require.True(t, rec.Completed())
	assert.Equal(t, RefusedUnknownKey, rec.Values()[0].Refused)
	assert.EqualValues(t, 1, f.store.gets.Load(), "one read: the key index")
	assert.Greater(t, f.clk.Scheduled(), scheduledBefore, "the read was bounded by a timer")
	assert.Zero(t, f.clk.Pending(), "which the answer disarmed")
}

func TestAValidKeyResolvesTheInstanceItsGrantAndThePlanLadder(t *testing.T) {
	f := newFixture(t)
	a := f.authenticator(nil)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("ci:"+f.key))
	for _, header := range []string{bearer(f.key), basic} {
		res := first(t, a.Authenticate(header))
		require.True(t, res.Authenticated(), "header %q: %+v", header, res)
		assert.Equal(t, "acme", res.Instance.ID)
		assert.Equal(t, "pro", res.Instance.Plan)
		assert.Empty(t, res.Unavailable)

		assert.True(t, res.Allows("Plugins", "charts", "pro"), "granted Plugins/*@pro on plan pro")
		assert.True(t, res.Allows("plugins", "charts", ""), "a package without a tier is at the baseline")
		assert.False(t, res.Allows("Plugins", "charts", "enterprise"), "enterprise outranks pro")
		assert.False(t, res.Allows("Reinsurance", "charts", ""), "a source the grant does not name")
	}
	assert.Zero(t, f.clk.Pending(), "every bound was disarmed by its answer")
}

func TestWithoutALadderPlanScopedEntriesLicenseNothing(t *testing.T) {
	f := newFixture(t)
	withLadder := f.authenticator(nil)
	noLadder := &Authenticator{Mesh: f.store, Clock: f.clk}

	res := first(t, noLadder.Authenticate(bearer(f.key)))
	require.True(t, res.Authenticated())
	assert.False(t, res.Allows("Plugins", "charts", "pro"), "an unknown plan licenses nothing")
	before := f.store.queries.Load()
	assert.Zero(t, before, "no ladder, no tier read")

	// Negative control: the same key with the ladder is allowed.
	assert.True(t, first(t, withLadder.Authenticate(bearer(f.key))).Allows("Plugins", "charts", "pro"))
}

func TestUnknownRevokedAndDisabledKeysAreRefusedWithAReason(t *testing.T) {
	f := newFixture(t)
	a := f.authenticator(nil)
	ctx := context.Background()
	authenticate := func(key string) Result { return first(t, a.Authenticate(bearer(key))) }

	unknown, err := NewKey()
	require.NoError(t, err)
	assert.Equal(t, Result{Refused: RefusedUnknownKey}, authenticate(unknown))

	// A revoked key whose index node is still there (say the revocation
	// stopped half way) is refused by the instance's own list.
	index := first(t, f.store.Store.Get(KeyIndexPath(HashKey(f.key))))
	require.NoError(t, f.reg.RevokeKey(ctx, "acme", f.key))
	assert.Equal(t, Result{Refused: RefusedUnknownKey}, authenticate(f.key), "revoked: the index node is gone")
	_, err = f.store.Put(ctx, index)
	require.NoError(t, err)
	assert.Equal(t, Result{Refused: RefusedRevokedKey}, authenticate(f.key), "an index node left behind does not bring the key back")

	key, err := f.reg.IssueKey(ctx, "acme")
	require.NoError(t, err)
	require.True(t, authenticate(key).Authenticated())
	require.NoError(t, f.reg.Disable(ctx, "acme"))
	assert.Equal(t, Result{Refused: RefusedDisabled}, authenticate(key))
	// Negative control: the same key is accepted again once enabled.
	require.NoError(t, f.reg.Enable(ctx, "acme"))
	assert.True(t, authenticate(key).Authenticated())

	// An index node leading to an instance that is gone.
	require.NoError(t, f.store.Delete(ctx, InstancePath("acme")))
	assert.Equal(t, Result{Refused: RefusedUnknownInstance}, authenticate(key))
}

func TestAnAbsentGrantIsTheEmptyGrant(t *testing.T) {
	f := newFixture(t)
	a := f.authenticator(nil)
	require.NoError(t, f.store.Delete(context.Background(), GrantPath("acme")))
	res := first(t, a.Authenticate(bearer(f.key)))
	require.True(t, res.Authenticated(), "registering is identity: no grant is not unauthenticated")
	assert.Empty(t, res.Grant.Entries)
	assert.False(t, res.Allows("Plugins", "charts", ""), "and entitles nothing")
}

// stallKeys are the reads of a resolved authentication, in order, each with
// the key a fault store stalls it by.
func stallKeys(f *fixture) []struct{ stage, key string } {
	return []struct{ stage, key string }{
		{StageInstanceKey, KeyIndexPath(HashKey(f.key))},
		{StageInstance, InstancePath("acme")},
		{StageGrant, GrantPath("acme")},
		{StagePlanTiers, StagePlanTiers},
	}
}

func TestEachStalledLegIsUnavailableExactlyAtItsBudgetAndNamesTheLeg(t *testing.T) {
	for _, stage := range []string{StageInstanceKey, StageInstance, StageGrant, StagePlanTiers} {
		t.Run(stage, func(t *testing.T) {
			f := newFixture(t)
			var key string
			for _, l := range stallKeys(f) {
				if l.stage == stage {
					key = l.key
				}
			}
			f.store.stall(key)
			const budget = 10 * time.Second
			rec := rxtest.Record(f.clk, f.authenticator(nil).Authenticate(bearer(f.key)))

			f.clk.Advance(budget - time.Nanosecond)
			assert.Empty(t, rec.Values(), "not a moment early")
			assert.Equal(t, 1, f.clk.Pending(), "the leg's bound is armed")

			f.clk.Advance(time.Nanosecond)
			require.Equal(t, []rxtest.Event[Result]{
				rxtest.Next(budget, Result{Unavailable: stage + ": no answer within 10s"}),
				rxtest.Completed[Result](budget),
			}, rec.Events())
			assert.Zero(t, f.clk.Pending())
			require.NoError(t, rec.GrammarErr())
		})
	}
}

func TestWithoutItsBoundAStalledLegWouldHoldTheRequestForever(t *testing.T) {
	// The negative control of the test above: the same stalled instance leg
	// with a budget out of reach gives no answer at 10s, nor at an hour.
	f := newFixture(t)
	f.store.stall(InstancePath("acme"))
	a := f.authenticator(nil)
	a.ReadBudget = 100 * time.Hour
	rec := rxtest.Record(f.clk, a.Authenticate(bearer(f.key)))
	f.clk.Advance(time.Hour)
	assert.False(t, rec.Terminated())
	rec.Unsubscribe()
	assert.Zero(t, f.clk.Pending(), "unsubscribing disarms the bound")
}

func TestAFailingStoreIsUnavailableNeverUnauthenticated(t *testing.T) {
	cases := []struct {
		name    string
		breakIt func(f *fixture)
		stage   string
	}{
		{"a store error on the key index", func(f *fixture) {
			f.store.fail(KeyIndexPath(HashKey(f.key)), &mesh.UnavailableError{Op: "read", Err: errors.New("connection refused")})
		}, StageInstanceKey},
		{"any other error on the instance", func(f *fixture) {
			f.store.fail(InstancePath("acme"), errors.New("disk on fire"))
		}, StageInstance},
		{"a stalled provider on the grant", func(f *fixture) {
			f.store.fail(GrantPath("acme"), &mesh.ProviderStalledError{Providers: []string{"pg"}, Budget: 15 * time.Second})
		}, StageGrant},
		{"a failing tier listing and no snapshot", func(f *fixture) {
			f.store.fail(StagePlanTiers, &mesh.UnavailableError{Op: "query", Err: errors.New("down")})
		}, StagePlanTiers},
		{"unreadable instance content", func(f *fixture) {
			n := first(t, f.store.Store.Get(InstancePath("acme")))
			n.Content = json.RawMessage(`{"keyHashes": "not a list"}`)
			_, err := f.store.Put(context.Background(), n)
			require.NoError(t, err)
		}, StageInstance},
		{"a closed store", func(f *fixture) { require.NoError(t, f.store.Close()) }, StageInstanceKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			a := f.authenticator(nil)
			// Negative control first: the same key on the healthy store.
			require.True(t, first(t, a.Authenticate(bearer(f.key))).Authenticated())

			a = f.authenticator(nil) // a cold ladder
			c.breakIt(f)
			res := first(t, a.Authenticate(bearer(f.key)))
			assert.False(t, res.Authenticated())
			assert.Empty(t, res.Refused, "not a statement about the key")
			assert.True(t, strings.HasPrefix(res.Unavailable, c.stage+": "), "names the leg: %q", res.Unavailable)
		})
	}
}

func TestALadderThatCannotBeReadFallsBackToItsLastSnapshot(t *testing.T) {
	f := newFixture(t)
	logs, logger := testkit.CaptureLogs()
	a := f.authenticator(logger)
	require.True(t, first(t, a.Authenticate(bearer(f.key))).Allows("Plugins", "charts", "pro"))

	f.clk.Advance(DefaultLadderCacheDuration)
	f.store.stall(StagePlanTiers)
	rec := rxtest.Record(f.clk, a.Authenticate(bearer(f.key)))
	f.store.waitEntered(t, StagePlanTiers)
	f.clk.Advance(DefaultLadderReadTimeout)
	require.True(t, rec.Completed())
	res := rec.Values()[0]
	assert.True(t, res.Authenticated(), "the last snapshot is a fact; only no ladder at all is unavailable")
	assert.True(t, res.Allows("Plugins", "charts", "pro"))
	assert.Contains(t, logs.Messages(slog.LevelWarn), "auth: could not read the plan-tier ladder; serving the last snapshot")
}

func TestAStalledLegIsBoundedOnAPlainMockClockToo(t *testing.T) {
	mock := clock.NewMock()
	f := newFixture(t)
	f.store.stall(GrantPath("acme"))
	a := &Authenticator{Mesh: f.store, Clock: mock}
	rec := rxtest.NewRecorder[Result](nil)
	sub := a.Authenticate(bearer(f.key)).Subscribe(rec)
	defer sub.Unsubscribe()
	f.store.waitEntered(t, GrantPath("acme"))
	mock.Add(DefaultReadBudget)
	require.True(t, rec.WaitTerminated(bound), "the mock's timer goroutine delivers the bound")
	assert.Equal(t, []Result{{Unavailable: "grant: no answer within 10s"}}, rec.Values())
}

func TestAuthenticateIsColdAndReadsNothingUntilSubscribed(t *testing.T) {
	f := newFixture(t)
	obs := f.authenticator(nil).Authenticate(bearer(f.key))
	assert.Zero(t, f.store.reads())
	// Negative control: subscribing reads.
	_, err := rx.First(context.Background(), obs)
	require.NoError(t, err)
	assert.Positive(t, f.store.reads())
}
