package main

import (
	"context"
	"os"
	"path/filepath"
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
func startDemo(t *testing.T, store mesh.Store, dir string, rotate bool) string {
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
	key, err := setUpDemo(ctx, store, landing, served, keyFile(filepath.Join(dir, demoKeyFile)), rotate)
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

// TestARestartPrintsTheKeyClientsUseAndOnlyRotateDemoKeyRevokesIt: the demo
// key is issued once per database and kept in the data directory (0600);
// every later start, or a replica on the same database and directory,
// prints it. Negative control: -rotate-demo-key (what every start did
// before) revokes the key clients hold.
func TestARestartPrintsTheKeyClientsUseAndOnlyRotateDemoKeyRevokesIt(t *testing.T) {
	store, err := memstore.New(memstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	dir := t.TempDir()

	first := startDemo(t, store, dir, false)
	require.True(t, authenticated(t, store, first), "the key a start prints works")
	info, err := os.Stat(filepath.Join(dir, demoKeyFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the kept key is readable by its owner only")

	again := startDemo(t, store, dir, false)
	assert.Equal(t, first, again, "a restart prints the same key")
	assert.True(t, authenticated(t, store, first), "and it still works")

	rotated := startDemo(t, store, dir, true)
	assert.NotEqual(t, first, rotated)
	assert.True(t, authenticated(t, store, rotated))
	assert.False(t, authenticated(t, store, first), "control: rotating revokes the key clients held")
	inst, err := (&auth.Instances{Mesh: store}).Instance(context.Background(), demoInstance)
	require.NoError(t, err)
	assert.Equal(t, []string{auth.HashKey(rotated)}, inst.KeyHashes, "one demo key, however often the example starts")
	assert.Equal(t, rotated, startDemo(t, store, dir, false), "the rotated key is the one kept")

	// Another database with the same data directory does not hold the kept
	// key: a key is issued for it.
	other, err := memstore.New(memstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	fresh := startDemo(t, other, dir, false)
	assert.NotEqual(t, rotated, fresh)
	assert.True(t, authenticated(t, other, fresh))
}
