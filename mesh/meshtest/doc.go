// Package meshtest is the conformance suite every mesh store passes: the
// embedded memstore and the PostgreSQL pgstore answer the same queries with
// the same frames, versions, routing and refusals.
//
// A store's tests call Run with a function that makes a fresh, empty store
// for each subtest:
//
//	func TestTheStorePassesTheConformanceSuite(t *testing.T) {
//		meshtest.Run(t, func(t *testing.T) mesh.Store {
//			s := newStoreOnAFreshDatabase(t)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite assumes no clock: stores may stamp real time. Live frames may
// arrive on other goroutines (a store that listens to its database), so every
// wait for one is bounded by a real-time deadline and says what it waited
// for; nothing sleeps. A store that implements io.Closer is also checked to
// answer "unavailable", never "absent", once closed.
//
// # Examples
//
// ExampleRun (example_test.go) is a worked example,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./mesh/meshtest/.
package meshtest
