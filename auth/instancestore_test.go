package auth

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// everyNode reads every node of the store.
func everyNode(t *testing.T, s *faultStore) []mesh.Node {
	t.Helper()
	return first(t, s.Store.Query("partitions:all")).Items
}

func TestAnIssuedKeyIsReturnedOnceAndOnlyItsHashIsStored(t *testing.T) {
	f := newFixture(t)
	hash := HashKey(f.key)

	var sawHash bool
	for _, n := range everyNode(t, f.store) {
		blob := n.Path + " " + n.Name + " " + string(n.Content)
		assert.NotContains(t, blob, f.key, "node %s holds the raw key", n.Path)
		assert.NotContains(t, blob, strings.TrimPrefix(f.key, KeyPrefix), "node %s holds the key's body", n.Path)
		sawHash = sawHash || strings.Contains(blob, hash)
	}
	// Negative control: the scan does see what was stored for the key.
	assert.True(t, sawHash, "the hash is stored")

	index := first(t, f.store.Store.Get(KeyIndexPath(hash)))
	assert.Equal(t, KeyIndexNodeType, index.NodeType)
	assert.JSONEq(t, `{"keyHash":"`+hash+`","instance":"acme"}`, string(index.Content))
	inst, err := f.reg.Instance(context.Background(), "acme")
	require.NoError(t, err)
	assert.Equal(t, []string{hash}, inst.KeyHashes)
}

func TestBadInstanceIdsAreRefusedWithATypedErrorAndNothingIsWritten(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	before := f.store.Stats().Nodes
	for _, id := range []string{"", "_Access", "a/b", "..", ".hidden", "sp ace", "é", strings.Repeat("a", 65)} {
		_, err := f.reg.Register(ctx, id, "x", "pro")
		var idErr *InstanceIDError
		require.ErrorAs(t, err, &idErr, "id %q", id)
		assert.Equal(t, id, idErr.ID)
		_, err = f.reg.IssueKey(ctx, id)
		require.ErrorAs(t, err, &idErr, "IssueKey(%q)", id)
		_, err = f.reg.SetGrant(ctx, id, "ops", "Plugins")
		require.ErrorAs(t, err, &idErr, "SetGrant(%q)", id)
	}
	assert.Equal(t, before, f.store.Stats().Nodes)
	// Negative control: a good id is written.
	_, err := f.reg.Register(ctx, "beta-2.eu_1", "Beta", "")
	require.NoError(t, err)
	assert.Equal(t, before+1, f.store.Stats().Nodes)
}

func TestRegisteringATakenIdOrActingOnAnUnknownInstanceIsATypedError(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.reg.Register(ctx, "acme", "Acme again", "free")
	var exists *InstanceExistsError
	require.ErrorAs(t, err, &exists)
	inst, err := f.reg.Instance(ctx, "acme")
	require.NoError(t, err)
	assert.Equal(t, "Acme Corp", inst.Name, "the first registration stands")

	var unknown *UnknownInstanceError
	_, err = f.reg.IssueKey(ctx, "nobody")
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, "nobody", unknown.ID)
	_, err = f.reg.RotateKey(ctx, "nobody")
	require.ErrorAs(t, err, &unknown)
	require.ErrorAs(t, f.reg.Disable(ctx, "nobody"), &unknown)
	_, err = f.reg.SetGrant(ctx, "nobody", "ops", "Plugins")
	require.ErrorAs(t, err, &unknown)
}

func TestASetGrantWithABadEntryWritesNothingAndNamesEveryBadEntry(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	before := first(t, f.store.Store.Get(GrantPath("acme")))
	_, err := f.reg.SetGrant(ctx, "acme", "ops", "Plugins/charts", "*/x", "Reinsurance/a*b", "Tools")
	require.Error(t, err)
	var entryErr *GrantEntryError
	require.ErrorAs(t, err, &entryErr)
	assert.Contains(t, err.Error(), `"*/x"`)
	assert.Contains(t, err.Error(), `"Reinsurance/a*b"`)
	after := first(t, f.store.Store.Get(GrantPath("acme")))
	assert.Equal(t, before.Version, after.Version, "the grant was not touched")

	// Negative control: the good entries alone are written, in text form.
	g, err := f.reg.SetGrant(ctx, "acme", "ops", "Plugins/charts", "Tools")
	require.NoError(t, err)
	assert.Equal(t, f.clk.Now().UTC(), g.UpdatedAt)
	var c grantContent
	require.NoError(t, json.Unmarshal(first(t, f.store.Store.Get(GrantPath("acme"))).Content, &c))
	assert.Equal(t, []string{"Plugins/charts", "Tools/*"}, c.Entries)
	assert.Equal(t, "ops", c.GrantedBy)
}

func TestRotateKeyRevokesEveryOtherKeyAndRevokeKeyTakesTheKeyOrItsHash(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.authenticator(nil)
	authenticated := func(key string) bool { return first(t, a.Authenticate(bearer(key))).Authenticated() }

	second, err := f.reg.IssueKey(ctx, "acme")
	require.NoError(t, err)
	require.True(t, authenticated(f.key))
	require.True(t, authenticated(second), "issuing adds a key; the first one stays valid")

	rotated, err := f.reg.RotateKey(ctx, "acme")
	require.NoError(t, err)
	assert.True(t, authenticated(rotated))
	assert.False(t, authenticated(f.key))
	assert.False(t, authenticated(second))
	for _, old := range []string{f.key, second} {
		_, ok, err := f.reg.read(ctx, "instance key", KeyIndexPath(HashKey(old)))
		require.NoError(t, err)
		assert.False(t, ok, "the old index nodes are gone")
	}

	byHash, err := f.reg.IssueKey(ctx, "acme")
	require.NoError(t, err)
	require.NoError(t, f.reg.RevokeKey(ctx, "acme", HashKey(byHash)))
	assert.False(t, authenticated(byHash), "revoked by its hash")
	require.NoError(t, f.reg.RevokeKey(ctx, "acme", rotated))
	assert.False(t, authenticated(rotated), "revoked by the key itself")

	err = f.reg.RevokeKey(ctx, "acme", rotated)
	var unknownKey *UnknownKeyError
	require.ErrorAs(t, err, &unknownKey, "a key revoked twice is no longer held")
	assert.NotContains(t, err.Error(), rotated, "the error never repeats the key")
}

func TestSetPlanTierWritesACanonicalTierTheLadderReads(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	require.NoError(t, f.reg.SetPlanTier(ctx, PlanTier{ID: " Team ", Rank: 1}))
	n := first(t, f.store.Store.Get(TierPath("team")))
	tier, err := ParsePlanTier(n.ID, n.Content)
	require.NoError(t, err)
	assert.Equal(t, PlanTier{ID: "team", Rank: 1}, tier)

	var tierErr *PlanTierError
	require.ErrorAs(t, f.reg.SetPlanTier(ctx, PlanTier{ID: "a/b", Rank: 1}), &tierErr)
	require.ErrorAs(t, f.reg.SetPlanTier(ctx, PlanTier{ID: "  ", Rank: 1}), &tierErr)
}

func TestARegistryReadThatStallsFailsAtItsBudgetNamingTheReadAndWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.store.stall(InstancePath("acme"))
	done := make(chan error, 1)
	go func() {
		_, err := f.reg.IssueKey(context.Background(), "acme")
		done <- err
	}()
	f.store.waitEntered(t, InstancePath("acme"))
	f.clk.Advance(DefaultReadBudget - time.Nanosecond)
	require.Equal(t, 1, f.clk.Pending(), "not a moment early")
	f.clk.Advance(time.Nanosecond)
	select {
	case err := <-done:
		var te *rx.TimeoutError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "instance", te.Stage)
		assert.Equal(t, DefaultReadBudget, te.After)
	case <-time.After(bound):
		require.FailNow(t, "the bound did not end the wait")
	}
	f.store.heal(InstancePath("acme"))
	inst, err := f.reg.Instance(context.Background(), "acme")
	require.NoError(t, err)
	assert.Equal(t, []string{HashKey(f.key)}, inst.KeyHashes, "no key was added")
}
