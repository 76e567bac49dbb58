package pgtest

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// outcome records how a test body that asked a Harness for a server ended.
type outcome struct {
	testing.TB
	skipped, failed string
}

func (o *outcome) Helper() {}
func (o *outcome) Skip(args ...any) {
	o.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}
func (o *outcome) Fatal(args ...any) {
	o.failed = fmt.Sprint(args...)
	runtime.Goexit()
}
func (o *outcome) Fatalf(format string, args ...any) {
	o.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// askForServer runs h.Server on a fresh goroutine, as the testing package
// runs a test, and reports how it ended.
func askForServer(t *testing.T, h *Harness) (*Server, *outcome) {
	t.Helper()
	o := &outcome{TB: t}
	var s *Server
	done := make(chan struct{})
	go func() {
		defer close(done)
		s = h.Server(o)
	}()
	select {
	case <-done:
	case <-time.After(DefaultStartBudget + time.Minute):
		t.Fatal("Harness.Server did not return within the start budget")
	}
	return s, o
}

func TestWithoutPostgreSQLATestSkipsSayingHowToInstallIt(t *testing.T) {
	h := &Harness{decide: func() Plan {
		return Decide(func(string) string { return "" }, Binaries{}, &NotFoundError{})
	}}
	s, o := askForServer(t, h)
	assert.Nil(t, s)
	assert.Empty(t, o.failed)
	assert.Contains(t, o.skipped, "apt-get install -y postgresql")
}

func TestWithoutPostgreSQLButRequiredATestFails(t *testing.T) {
	h := &Harness{decide: func() Plan {
		return Decide(func(k string) string { return map[string]string{EnvRequire: "1"}[k] }, Binaries{}, &NotFoundError{})
	}}
	s, o := askForServer(t, h)
	assert.Nil(t, s)
	assert.Empty(t, o.skipped)
	assert.Contains(t, o.failed, "apt-get install -y postgresql")
}

func TestAServerThatCannotStartFailsTheTestInsteadOfSkippingIt(t *testing.T) {
	// Nothing listens on port 1: the connection is refused at once.
	h := &Harness{decide: func() Plan {
		return Plan{Mode: ModeExternal, URL: "postgres://nobody@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=5"}
	}}
	s, o := askForServer(t, h)
	assert.Nil(t, s)
	assert.Empty(t, o.skipped)
	assert.Contains(t, o.failed, "starting the external PostgreSQL server")
	assert.Contains(t, o.failed, "127.0.0.1:1")
}

type fakeM struct {
	run func() int
}

func (m fakeM) Run() int { return m.run() }

func TestWrapStopsTheServerAfterTheTestsEvenWhenTheyPanic(t *testing.T) {
	host := pg.Server(t)
	h := &Harness{decide: func() Plan { return Plan{Mode: ModeExternal, URL: host.URL()} }}

	var shared *Server
	var dbURL string
	m := fakeM{run: func() int {
		var o *outcome
		shared, o = askForServer(t, h)
		require.NotNil(t, shared, "skipped %q failed %q", o.skipped, o.failed)
		var err error
		dbURL, err = shared.CreateDatabase(t.Context(), "wrap")
		require.NoError(t, err)
		panic("a test binary's main goroutine panics")
	}}
	require.PanicsWithValue(t, "a test binary's main goroutine panics", func() { h.Wrap(m).Run() })

	_, err := shared.CreateDatabase(t.Context(), "after")
	assert.ErrorIs(t, err, ErrStopped, "the server must be stopped on the way out")
	hostConn := connect(t, host.URL())
	var n int
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, hostConn.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, dbName(t, dbURL)).Scan(&n))
	assert.Zero(t, n, "the database the tests left must be dropped")
}

func TestWrapReportsTheTestsExitCodeAndStartsNothingUnasked(t *testing.T) {
	decided := false
	h := &Harness{decide: func() Plan { decided = true; return Plan{Mode: ModeSkip, Reason: "x"} }}
	for _, code := range []int{0, 1, 3} {
		assert.Equal(t, code, h.Wrap(fakeM{run: func() int { return code }}).Run())
	}
	assert.False(t, decided, "no test asked for a server, so none is looked for")
}
