package memstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/mesh/meshtest"
)

// The store as production configures it (real clock, default router and
// budgets) passes the suite every store passes.
func TestTheStorePassesTheConformanceSuite(t *testing.T) {
	meshtest.Run(t, func(t *testing.T) mesh.Store {
		s, err := memstore.New(memstore.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
