package pgstore

import (
	"testing"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/meshtest"
)

// The store as production configures it (real clock, default router and
// budgets), each subtest on a fresh database, passes the suite every store
// passes.
func TestTheStorePassesTheConformanceSuite(t *testing.T) {
	meshtest.Run(t, func(t *testing.T) mesh.Store {
		return openStore(t, pg.Database(t), Options{})
	})
}
