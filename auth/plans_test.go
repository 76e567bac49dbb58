package auth

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegisterRefusesAPlanTheLadderDoesNotHaveNamingTheKnownOnes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	before := f.store.Stats().Nodes

	_, err := f.reg.Register(ctx, "gold-customer", "Gold", "gold")
	var unknown *UnknownPlanError
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, "gold", unknown.Plan)
	assert.Equal(t, []string{"free", "pro", "enterprise"}, unknown.Known, "cheapest first")
	assert.Contains(t, err.Error(), "free, pro, enterprise")
	assert.Equal(t, before, f.store.Stats().Nodes, "nothing is written for an unknown plan")

	// Control: a plan the ladder has (in any case) and the blank baseline register.
	inst, err := f.reg.Register(ctx, "pro-customer", "Pro", " PRO ")
	require.NoError(t, err)
	assert.Equal(t, "pro", inst.Plan)
	_, err = f.reg.Register(ctx, "baseline-customer", "Baseline", "")
	require.NoError(t, err)
	assert.Equal(t, before+2, f.store.Stats().Nodes)
}
