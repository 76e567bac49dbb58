package meshtest_test

import (
	"testing"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/mesh/meshtest"
)

// A store's conformance test hands Run a function that makes a fresh,
// empty store for each check; here the embedded memstore. Run needs the
// *testing.T of a test (each check is a subtest), so this example shows
// the test and is compiled, not run: memstore's own
// TestTheStorePassesTheConformanceSuite runs it.
func ExampleRun() {
	testTheStorePassesTheConformanceSuite := func(t *testing.T) {
		meshtest.Run(t, func(t *testing.T) mesh.Store {
			s, err := memstore.New(memstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		})
	}
	_ = testTheStorePassesTheConformanceSuite
}
