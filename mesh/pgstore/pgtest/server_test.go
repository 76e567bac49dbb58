package pgtest

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// localBinaries returns the programs for a test that starts servers of its
// own, skipping or failing t (as Decide says) when there are none. A server
// URL in the environment does not help such a test.
func localBinaries(t *testing.T) Binaries {
	t.Helper()
	bins, err := FindBinaries(os.Getenv("PATH"), DebianRoot)
	withoutURL := func(k string) string {
		if k == EnvURL {
			return ""
		}
		return os.Getenv(k)
	}
	switch p := Decide(withoutURL, bins, err); p.Mode {
	case ModeSkip:
		t.Skip("this test starts its own server: " + p.Reason)
	case ModeFail:
		t.Fatal("this test starts its own server: " + p.Reason)
	}
	return bins
}

// traversableTempDir makes a directory the postgres OS user can reach when
// the tests run as root (t.TempDir's parents are private to root).
func traversableTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgtest-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	})
	return conn
}

func hostPort(t *testing.T, url string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}

func TestALocalServerKeepsDatabasesApartAndLeavesNothingBehindWhenStopped(t *testing.T) {
	bins := localBinaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	s, err := Config{Binaries: bins, TempDir: traversableTempDir(t)}.Start(ctx)
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = s.Stop()
		}
	})
	dir, addr := s.Dir(), hostPort(t, s.URL())
	require.DirExists(t, dir)
	assert.True(t, strings.HasPrefix(filepath.Base(dir), dirPrefix+strconv.Itoa(os.Getpid())+"-"),
		"the directory name must say whose server it is: %s", dir)

	urlA, err := s.CreateDatabase(ctx, "isolation A")
	require.NoError(t, err)
	urlB, err := s.CreateDatabase(ctx, "isolation A") // same label, still a database of its own
	require.NoError(t, err)
	require.NotEqual(t, urlA, urlB)

	a, b := connect(t, urlA), connect(t, urlB)
	for conn, v := range map[*pgx.Conn]string{a: "a", b: "b"} {
		_, err := conn.Exec(ctx, `CREATE TABLE marker (v text)`)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, `INSERT INTO marker VALUES ($1)`, v)
		require.NoError(t, err)
	}
	_, err = a.Exec(ctx, `CREATE TABLE only_in_a (x int)`)
	require.NoError(t, err)

	for conn, want := range map[*pgx.Conn][]string{a: {"a"}, b: {"b"}} {
		rows, err := conn.Query(ctx, `SELECT v FROM marker`)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err = a.Exec(ctx, `SELECT * FROM only_in_a`)
	require.NoError(t, err, "control: the table is there in its own database")
	_, err = b.Exec(ctx, `SELECT * FROM only_in_a`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	assert.Equal(t, "42P01", pgErr.Code, "undefined_table: B must not see A's table")

	// Control for the checks after Stop: the port is open now.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	require.NoError(t, c.Close())

	require.NoError(t, s.Stop(), "Stop must not need the tests to close their connections first")
	stopped = true
	assert.NoDirExists(t, dir)
	_, err = net.Dial("tcp", addr)
	assert.Error(t, err, "the server's port must be closed after Stop")

	assert.NoError(t, s.Stop(), "Stop is idempotent")
	_, err = s.CreateDatabase(ctx, "late")
	assert.ErrorIs(t, err, ErrStopped)
}

func TestAnExternalServerOutlivesStopButLosesTheDatabasesItsTestsCreated(t *testing.T) {
	host := pg.Server(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	ext, err := Config{URL: host.URL()}.Start(ctx)
	require.NoError(t, err)
	assert.Empty(t, ext.Dir(), "an external server has no directory of ours")

	urlA, err := ext.CreateDatabase(ctx, "external A")
	require.NoError(t, err)
	urlB, err := ext.CreateDatabase(ctx, "external B")
	require.NoError(t, err)
	names := []string{dbName(t, urlA), dbName(t, urlB)}

	hostConn := connect(t, host.URL())
	count := func() int {
		var n int
		require.NoError(t, hostConn.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = ANY($1)`, names).Scan(&n))
		return n
	}
	require.Equal(t, 2, count(), "control: both databases exist")

	// A connection left open must not keep a database alive.
	_ = connect(t, urlA)
	require.NoError(t, ext.DropDatabase(ctx, urlB))
	assert.Equal(t, 1, count())

	err = ext.DropDatabase(ctx, host.URL())
	require.Error(t, err, "a database the server did not create is never dropped")
	assert.Contains(t, err.Error(), "not created by this server")

	require.NoError(t, ext.Stop())
	assert.Equal(t, 0, count(), "Stop drops what is left")
	require.NoError(t, ping(ctx, host.URL()), "an external server keeps running")
}

func dbName(t *testing.T, url string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	return cfg.Database
}

func TestAServerDiesWithTheTestBinaryThatStartedIt(t *testing.T) {
	localBinaries(t)
	tmp := traversableTempDir(t)
	// Whatever happens below, no server of the child's survives the test.
	t.Cleanup(func() { reapStale(tmp, Config{}.logger()) })

	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), helperEnv+"=serve", helperEnv+"_TMP="+tmp, EnvURL+"=")
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	out, w, err := os.Pipe()
	require.NoError(t, err)
	child.Stdout, child.Stderr = w, os.Stderr
	require.NoError(t, child.Start())
	require.NoError(t, w.Close())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = child.Process.Kill()
		_ = child.Wait()
		_ = out.Close()
	})

	// The child prints its server's URL and directory once it is ready.
	require.NoError(t, out.SetReadDeadline(time.Now().Add(DefaultStartBudget)))
	r := bufio.NewReader(out)
	url, err := r.ReadString('\n')
	require.NoError(t, err, "waiting for the child's server to start")
	dir, err := r.ReadString('\n')
	require.NoError(t, err)
	url, dir = strings.TrimSpace(url), strings.TrimSpace(dir)

	conn := connect(t, url)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = conn.Exec(ctx, `LISTEN pgtest_crash`)
	require.NoError(t, err)

	// SIGKILL: no deferred Stop, no cleanup of any kind runs in the child.
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()

	// The server must go away by itself. Without the parent-death signal it
	// would keep this connection open and the wait would end at its deadline
	// instead.
	waitCtx, cancelWait := context.WithTimeout(ctx, 30*time.Second)
	defer cancelWait()
	_, err = conn.WaitForNotification(waitCtx)
	require.Error(t, err)
	require.False(t, errors.Is(err, context.DeadlineExceeded),
		"the server outlived the killed test binary: %v", err)

	// Its directory is left; the next start's reaper removes it.
	require.DirExists(t, dir)
	removed := reapStale(tmp, Config{}.logger())
	assert.Equal(t, []string{dir}, removed)
	assert.NoDirExists(t, dir)
}

func TestDatabaseNamesAreUniqueBoundedAndSafe(t *testing.T) {
	long := strings.Repeat("TestSomethingVeryLong/with_subtests ", 10)
	for _, label := range []string{"TestX", "Test/sub case #1", long, "", "!!!", "ÜNICODE"} {
		a, err := databaseName(label)
		require.NoError(t, err)
		b, err := databaseName(label)
		require.NoError(t, err)
		assert.NotEqual(t, a, b, "two databases for one label")
		assert.LessOrEqual(t, len(a), 63, "PostgreSQL truncates longer names: %s", a)
		assert.Regexp(t, `^meshrx_[a-z0-9_]+_[0-9a-f]{12}$`, a)
	}
	name, err := databaseName("Test/sub case #1")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(name, "meshrx_test_sub_case_1_"), name)
}

func TestADatabaseURLKeepsEverythingButTheDatabase(t *testing.T) {
	for _, base := range []string{
		"postgres://alice:s3cret@db.example:6543/postgres?sslmode=disable&application_name=x",
		"postgresql://alice:s3cret@db.example:6543?sslmode=disable",
		"host=db.example port=6543 user=alice password=s3cret dbname=postgres sslmode=disable",
	} {
		got, err := withDatabase(base, "meshrx_t_0123456789ab")
		require.NoError(t, err)
		want, err := pgx.ParseConfig(base)
		require.NoError(t, err)
		cfg, err := pgx.ParseConfig(got)
		require.NoError(t, err)
		assert.Equal(t, "meshrx_t_0123456789ab", cfg.Database, base)
		assert.Equal(t, want.Host, cfg.Host)
		assert.Equal(t, want.Port, cfg.Port)
		assert.Equal(t, want.User, cfg.User)
		assert.Equal(t, want.Password, cfg.Password)
		assert.Equal(t, want.TLSConfig == nil, cfg.TLSConfig == nil, "sslmode must survive")
		assert.Equal(t, want.RuntimeParams, cfg.RuntimeParams)
	}
}

func TestAServerThatNeverAnswersFailsNamingTheWaitAndIsKilled(t *testing.T) {
	// Fake programs: initdb succeeds, pg_ctl refuses, and "postgres" records
	// its pid and never listens. Only the start budget can end the wait.
	tmp := traversableTempDir(t)
	bin := filepath.Join(tmp, "bin")
	require.NoError(t, os.Mkdir(bin, 0o777))
	require.NoError(t, os.Chmod(bin, 0o777)) // the postgres OS user writes the pid file when tests run as root
	scripts := map[string]string{
		"initdb":   "#!/bin/sh\nexit 0\n",
		"pg_ctl":   "#!/bin/sh\necho 'pg_ctl: refusing' >&2\nexit 1\n",
		"postgres": "#!/bin/sh\necho $$ > \"$(dirname \"$0\")/pid\"\nexec sleep 600\n",
	}
	for name, script := range scripts {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755))
	}
	bins, err := FindBinaries(bin)
	require.NoError(t, err)

	// Long enough for the fake to record its pid on a loaded machine.
	const budget = 2 * time.Second
	_, err = Config{Binaries: bins, TempDir: tmp, StartBudget: budget, StopBudget: time.Second}.Start(t.Context())
	var wait *WaitError
	require.ErrorAs(t, err, &wait)
	assert.Contains(t, wait.What, "to accept connections")
	assert.Equal(t, budget, wait.Budget)

	pidText, err := os.ReadFile(filepath.Join(bin, "pid"))
	require.NoError(t, err, "the fake server must have run")
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	require.NoError(t, err)
	assert.False(t, processExists(pid), "a server that failed to start must not be left running")
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), dirPrefix), "left behind: %s", e.Name())
	}
}
