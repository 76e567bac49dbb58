// Package pgtest starts (or connects to) a PostgreSQL server for tests, so
// that `go test ./...` exercises real PostgreSQL with no setup.
//
// Where the server comes from is decided once per test binary (Decide):
//
//   - MESHRX_PG_URL set: that server is used; each test gets a database of
//     its own there, dropped when the test ends.
//   - otherwise, if initdb, pg_ctl and postgres are found on PATH or in
//     /usr/lib/postgresql/*/bin (highest version): a throwaway cluster is
//     initdb'ed under os.TempDir and started on a free loopback port, as the
//     postgres OS user when running as root. It is stopped and its directory
//     removed when the test binary ends; if the binary dies first, the kernel
//     stops the server (Linux) and the next run removes the directory.
//   - otherwise tests that need a server skip, saying how to install one,
//     or fail when MESHRX_REQUIRE_PG=1 (as CI sets it).
//
// A test package uses it through a Harness:
//
//	var pg pgtest.Harness
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(pg.Wrap(m)) }
//
//	func TestSomething(t *testing.T) {
//		conn, err := pgx.Connect(t.Context(), pg.Database(t))
//		...
//	}
//
// Outside Unix (e.g. Windows) the package builds (GOOS=windows go vet is
// checked; it has not been run there): a local cluster runs as this
// process's user, no signal can be sent (Server.Signal and SignalServer
// return ErrNoSignals), and a crashed binary's directory is left behind
// rather than reaped.
//
// Every wait (initdb, start, readiness, stop, creating and dropping
// databases) has a budget; when one runs out the error is a *WaitError that
// names what was waited on.
//
// # Examples
//
// ExampleStart (example_test.go) is a worked example,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./mesh/pgstore/pgtest/.
package pgtest
