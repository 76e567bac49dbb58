package auth

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/mesh/pgstore"
)

// The stores of the fail-closed tests, each opened with zero options: the
// configuration a user who has not read the docs has.
var zeroOptionStores = []struct {
	name string
	open func(t *testing.T) mesh.Store
}{
	{"memstore", func(t *testing.T) mesh.Store {
		s, err := memstore.New(memstore.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}},
	{"pgstore", func(t *testing.T) mesh.Store {
		url := pg.Database(t)
		// A bound on opening (migrations included), not a pause: the
		// machine running CI is shared.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s, err := pgstore.Open(ctx, url, pgstore.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}},
}

func TestAPolicyCapHoldsOnAStoreOpenedWithZeroOptions(t *testing.T) {
	for _, st := range zeroOptionStores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			ctx := context.Background()
			// alice is Admin of her own partition by the fold's rule; the
			// policy caps Update there for everyone, her included.
			putNode(t, s, "alice/_Policy", PolicyNodeType, map[string]any{"update": false})
			fs := &FoldSource{Reader: s.(mesh.SecurityReader)}
			assert.Equal(t, access.Denied, fs.Decide(ctx, "alice", "alice/doc", access.Update),
				"the partition policy must cap its own user on a store opened with zero options")
			assert.Equal(t, access.Allowed, fs.Decide(ctx, "alice", "alice/doc", access.Read), "the cap leaves Read")
		})
	}
}

// legacyReader is a store as it was before every store gated the security
// types: one opened without GatedTypes kept no security node and declared
// nothing.
type legacyReader struct{ mesh.SecurityReader }

func (r legacyReader) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	snap, err := r.SecurityReader.SecurityNodes(ctx)
	return mesh.SecuritySnapshot{Version: snap.Version}, err
}

func TestADecisionOverAReaderThatDoesNotDeclareTheSecurityTypesIsUndeterminedAndLogged(t *testing.T) {
	s, err := memstore.New(memstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	putNode(t, s, "alice/_Policy", PolicyNodeType, map[string]any{"update": false})

	var logs bytes.Buffer
	fs := &FoldSource{Reader: legacyReader{s}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	assert.Equal(t, access.Undetermined, fs.Decide(ctx, "alice", "alice/doc", access.Update))
	assert.Equal(t, access.Undetermined, fs.Decide(ctx, "alice", "alice/doc", access.Read), "nothing is decided over it, not even a grant")
	_, err = fs.Fold(ctx)
	var undeclared *UndeclaredSecurityTypesError
	require.ErrorAs(t, err, &undeclared)
	assert.ElementsMatch(t, SecurityTypes(), undeclared.Missing)
	assert.Contains(t, logs.String(), "does not declare the node types", "the refusal is logged")

	t.Run("negative control: the fold built over the same snapshot without the check allows the capped update", func(t *testing.T) {
		snap, err := legacyReader{s}.SecurityNodes(ctx)
		require.NoError(t, err)
		as, _, err := BuildAccessSnapshot(snap.Nodes, nil)
		require.NoError(t, err)
		f, err := access.NewFold(as)
		require.NoError(t, err)
		assert.Equal(t, access.Allowed, f.Decide("alice", "alice/doc", access.Update), "Denied became Allowed: the failure the check prevents")
	})

	t.Run("a gated type of the FoldSource's own must be declared too", func(t *testing.T) {
		fs := &FoldSource{Reader: s, GatedTypes: []string{"PluginListing"}, Logger: slog.New(slog.DiscardHandler)}
		assert.Equal(t, access.Undetermined, fs.Decide(ctx, "alice", "alice/doc", access.Read))
		_, err := fs.Fold(ctx)
		require.True(t, errors.As(err, &undeclared))
		assert.Equal(t, []string{"PluginListing"}, undeclared.Missing)
	})
}

func TestEveryFoldTypeIsAMeshSecurityType(t *testing.T) {
	for _, typ := range SecurityTypes() {
		assert.Truef(t, mesh.SecuritySnapshot{GatedTypes: mesh.SecurityTypes()}.Declares(typ),
			"auth reads %s, which mesh does not gate by default", typ)
	}
}
