package pgtest

import (
	"os"
	"testing"
)

// ProgramDatabase is for a test that runs a program which starts its own
// PostgreSQL unless it is given one (as examples/faults and examples/pglive
// do, for users): it decides from the environment as Harness does and
// returns "" when the program should start its own (the server programs are
// here), or the URL of a fresh database on the server EnvURL names (dropped
// when t ends), for the program's -pg flag. Where there is no server it
// skips t with the reason, or fails t when one is required.
func ProgramDatabase(t testing.TB, name string) string {
	t.Helper()
	bins, err := FindBinaries(os.Getenv("PATH"), DebianRoot)
	return programDatabase(t, name, Decide(os.Getenv, bins, err))
}

func programDatabase(t testing.TB, name string, plan Plan) string {
	t.Helper()
	switch plan.Mode {
	case ModeLocal:
		return ""
	case ModeSkip:
		t.Skip(plan.Reason)
	case ModeFail:
		t.Fatal(plan.Reason)
	case ModeExternal:
		srv, err := Config{URL: plan.URL}.Start(t.Context())
		if err != nil {
			t.Fatalf("pgtest: starting the external PostgreSQL server: %v", err)
		}
		db, err := srv.CreateDatabase(t.Context(), name)
		if err != nil {
			_ = srv.Stop()
			t.Fatal(err)
		}
		// Stop drops the database (an external server's Stop drops what
		// CreateDatabase made) and leaves the server running.
		t.Cleanup(func() {
			if err := srv.Stop(); err != nil {
				t.Error(err)
			}
		})
		return db
	}
	return ""
}
