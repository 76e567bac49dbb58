package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// startDemo sets the demo up on store and data directory dir, as one start
// of the example does, and returns the key it would print.
func startDemo(t *testing.T, store mesh.Store, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	landing, err := landing.NewModuleLanding(landing.DirVolume(dir), landing.Options{})
	require.NoError(t, err)
	served := registry.NewServedActivation(landing, registry.ServedOptions{})
	defer func() {
		assert.NoError(t, served.Close(ctx))
		assert.NoError(t, landing.Shutdown(ctx))
	}()
	key, err := setUpDemo(ctx, store, landing, served)
	require.NoError(t, err)
	return key
}

func authenticated(t *testing.T, store mesh.Store, key string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	a := &auth.Authenticator{Mesh: store, Ladder: &auth.PlanTierLadder{Mesh: store}}
	res, err := rx.First(ctx, a.Authenticate("Bearer "+key))
	require.NoError(t, err)
	require.Empty(t, res.Unavailable)
	return res.Authenticated()
}

// Negative control: with the key issued beside the others (IssueKey, as
// before), the instance holds two hashes after the restart and the first
// key still authenticates; both assertions below then fail.
func TestARestartOnTheSameStoreRevokesThePreviousDemoKey(t *testing.T) {
	store, err := memstore.New(memstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	dir := t.TempDir()

	before := startDemo(t, store, dir)
	require.True(t, authenticated(t, store, before), "the key a start prints works")

	after := startDemo(t, store, dir)
	assert.True(t, authenticated(t, store, after), "the key the restart prints works")
	assert.False(t, authenticated(t, store, before), "the key the earlier start printed is revoked")

	inst, err := (&auth.Instances{Mesh: store}).Instance(context.Background(), demoInstance)
	require.NoError(t, err)
	assert.Equal(t, []string{auth.HashKey(after)}, inst.KeyHashes, "one demo key, however often the example starts")
}
