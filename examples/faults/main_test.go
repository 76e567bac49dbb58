package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
)

func TestMain(m *testing.M) {
	// The run starts its replicas as this binary again (see child.go).
	if config := os.Getenv(childEnv); config != "" {
		if err := runChild(config, os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "faults replica:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// shortBudget bounds the short schedule (≤ 60 s of faults and quiet) with
// its setup and verification.
const shortBudget = 4 * time.Minute

// summaryLine is the last line's exact shape.
var summaryLine = regexp.MustCompile(`^summary: requests=\d+ wrong_401=\d+ retry_after_missing=\d+ other_5xx=\d+ lost_publications=\d+ lost_notifications=\d+ silent_gaps=\d+ unannounced_records_served_within_freshness=\d+/\d+ readyz_ok_while_db_down_s=[\d.]+ recovery_p99_s=[\d.]+ max_unavailable_s=[\d.]+ goroutines_growth=-?\d+ rss_growth_mb=-?[\d.]+$`)

func TestTheShortFaultScheduleBreaksNoInvariant(t *testing.T) {
	args := pgArgs(t, "-schedule", "short")
	ctx, cancel := context.WithTimeout(t.Context(), shortBudget)
	defer cancel()
	var out, logs bytes.Buffer
	sum, err := run(ctx, args, &out, &logs)
	require.NoError(t, err, "logs:\n%s\noutput:\n%s", logs.String(), out.String())
	t.Log("\n" + out.String())

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Regexp(t, summaryLine, lines[len(lines)-1], "the last line is the summary")
	assert.True(t, sum.requests > 0, "load ran")
	assert.Zero(t, sum.wrong401, "a valid key never gets 401")
	assert.Zero(t, sum.retryAfterMissing, "every 503 carries Retry-After and waitingOn")
	assert.Zero(t, sum.other5xx)
	assert.Zero(t, sum.lostPublications)
	assert.Zero(t, sum.lostNotifications)
	assert.Zero(t, sum.silentGaps)
	assert.Positive(t, sum.unannouncedTotal, "records were committed without their announcement")
	assert.Equal(t, sum.unannouncedTotal, sum.unannouncedServed, "each was served by the other replica within the freshness bound")
	assert.Zero(t, sum.readyzOKWhileDown)
	assert.Zero(t, sum.readyzMissing, "/readyz is served")
	assert.Zero(t, sum.neverRecovered)
	assert.LessOrEqual(t, sum.recoveryP99, 10*time.Second)
	assert.True(t, sum.clean())
}

// Two replicas sharing nothing but the database and a bucket (-volume s3,
// on an S3-protocol server the run starts): a replica killed and restarted,
// then the object store stopped for 4 s. The outage is answered with 503s
// carrying Retry-After and waitingOn (the phase counts them: the outage
// bit), never another 5xx, and every publication answered 201 is served by
// both replicas afterwards. The checker's own negative control is
// TestTheCheckerCountsEveryForbiddenAnswer; without landing.ErrUnavailable
// among the registry's "could not find out" errors, the refused connections
// would be 500s here.
func TestAnObjectStoreOutageIsAnsweredWith503sAndLosesNothing(t *testing.T) {
	args := pgArgs(t, "-schedule", "short", "-volume", "s3", "-only", "3,8")
	ctx, cancel := context.WithTimeout(t.Context(), shortBudget)
	defer cancel()
	var out, logs bytes.Buffer
	sum, err := run(ctx, args, &out, &logs)
	require.NoError(t, err, "logs:\n%s\noutput:\n%s", logs.String(), out.String())
	t.Log("\n" + out.String())
	row := regexp.MustCompile(`(?m)^8 object store stopped 4s, then started\s+\S+\s+\S+\s+(\d+)\s+(\d+)\s`).FindStringSubmatch(out.String())
	require.NotNil(t, row, "the outage's phase row")
	n503, err := strconv.Atoi(row[2])
	require.NoError(t, err)
	assert.Positive(t, n503, "requests during the outage were answered 503")
	assert.Zero(t, sum.other5xx)
	assert.Zero(t, sum.retryAfterMissing)
	assert.Zero(t, sum.lostPublications)
	assert.Zero(t, sum.neverRecovered)
	assert.True(t, sum.clean())
}

// pgArgs returns args with the database the run should use: none (the run
// starts its own), or an external one (-pg), or it skips the test.
func pgArgs(t *testing.T, args ...string) []string {
	if db := pgtest.ProgramDatabase(t, "faults"); db != "" {
		args = append(args, "-pg", db)
	}
	return args
}

// The checker can fail: the answers the invariants forbid are counted
// (negative control for the test above, whose zeros would otherwise prove
// nothing).
func TestTheCheckerCountsEveryForbiddenAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/401":
			w.WriteHeader(http.StatusUnauthorized)
		case "/503-bare":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/503-no-waiting-on":
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"x","reason":"instance key: down"}`))
		case "/503-good":
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"x","waitingOn":["instance key"]}`))
		case "/500":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusNotModified)
		}
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	var out bytes.Buffer
	tl := newTally(&out)
	for _, path := range []string{"/401", "/503-bare", "/503-no-waiting-on", "/503-good", "/500", "/304"} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		resp, body, err := do(srv.Client(), req)
		cancel()
		tl.classify(path, resp, body, err)
	}
	c := tl.total
	assert.Equal(t, int64(6), c.requests)
	assert.Equal(t, int64(1), c.wrong401)
	assert.Equal(t, int64(2), c.retryAfterMissing, "a 503 without Retry-After, and one without waitingOn")
	assert.Equal(t, int64(1), c.other5xx)
	assert.Contains(t, out.String(), "violation wrong_401")
}

func TestAP99IsTheNearestRank(t *testing.T) {
	assert.Equal(t, time.Duration(0), p99(nil))
	assert.Equal(t, 3*time.Second, p99([]time.Duration{time.Second, 3 * time.Second, 2 * time.Second}))
}

func TestReadyzCountsA200OnlyInsideAWindowTheDatabaseWasHeldDown(t *testing.T) {
	at := func(ms int) time.Time { return time.UnixMilli(int64(ms)) }
	var out bytes.Buffer
	l := &load{tally: newTally(&out)}
	l.databaseDown(at(1000), at(5000))
	l.readyz = []readyzAnswer{
		{start: at(1100), end: at(1150), status: http.StatusOK, replica: "early"},      // within ReadinessReuse: evaluated before
		{start: at(2000), end: at(2100), status: http.StatusOK, replica: "a"},          // counted
		{start: at(3000), end: at(3100), status: http.StatusServiceUnavailable},        // honest
		{start: at(4900), end: at(5200), status: http.StatusOK},                        // answered after the database was back
		{start: at(6000), end: at(6100), status: http.StatusOK},                        // outside
		{start: at(1500), end: at(1600), status: http.StatusNotFound, replica: "none"}, // no /readyz
	}
	d, _ := l.readyzOKWhileDown()
	assert.Equal(t, readyzInterval, d)
	assert.Contains(t, out.String(), "replica a answered /readyz 200")
	assert.NotContains(t, out.String(), "replica early")
}

// A flag value the run cannot use is refused, naming its flag, before
// anything starts. Negative control: without the checks -publish-every 0
// (and -notify-every 0) passed, the run started PostgreSQL and both
// replicas, then panicked in time.NewTicker ("non-positive interval"),
// leaving the server's directory and both replica processes behind; a
// negative -pollers, -quiet, -freshness or -warmup was silently taken as
// none or as the default.
func TestABadFlagValueIsRefusedNamingItsFlag(t *testing.T) {
	for _, c := range []struct{ args []string }{
		{[]string{"-publish-every", "0s"}},
		{[]string{"-publish-every", "-1s"}},
		{[]string{"-notify-every", "0s"}},
		{[]string{"-pollers", "0"}},
		{[]string{"-pollers", "-3"}},
		{[]string{"-quiet", "-5s"}},
		{[]string{"-freshness", "-1s"}},
		{[]string{"-warmup", "-1s"}},
	} {
		var stderr bytes.Buffer
		_, err := run(t.Context(), append([]string{"-schedule", "short"}, c.args...), io.Discard, &stderr)
		if assert.Error(t, err, "%q", c.args) {
			assert.Contains(t, err.Error(), c.args[0], "the error names the flag")
		}
	}
	// Control: the same flags at usable values parse (0 is the documented
	// default for -quiet, -freshness and -warmup).
	cfg, err := parseFlags([]string{"-publish-every", "1s", "-notify-every", "1s", "-pollers", "1", "-quiet", "0s", "-freshness", "0s", "-warmup", "0s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, time.Second, cfg.publishEvery)
}

// A replica process ends, shutting down, when the run that started it is
// gone without stopping it (killed, or dead of a panic): the run holds the
// replica's stdin open, and the kernel closes it when the run dies, which
// the test does by hand. Negative control: a replica that did not watch
// its stdin (as before) served on; the runs that had panicked left two
// registries listening, parented to init, until someone killed them.
func TestAReplicaEndsWhenTheRunThatStartedItIsGone(t *testing.T) {
	db := pgtest.ProgramDatabase(t, "faults")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if db == "" {
		srv, err := pgtest.Config{}.Start(ctx)
		require.NoError(t, err)
		defer func() { assert.NoError(t, srv.Stop()) }()
		db, err = srv.CreateDatabase(ctx, "faults")
		require.NoError(t, err)
	}
	dir := t.TempDir()
	cc, err := json.Marshal(childConfig{Name: "a", PGURL: db, Data: dir, Addr: "127.0.0.1:0", Token: "t",
		Control: filepath.Join(dir, "control"), Freshness: 3 * time.Second})
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+string(cc))
	var logs bytes.Buffer
	cmd.Stderr = &logs
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	listening, exited := make(chan struct{}), make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for seen := false; sc.Scan(); {
			if !seen && strings.HasPrefix(sc.Text(), "listening on ") {
				seen = true
				close(listening)
			}
		}
		exited <- cmd.Wait()
	}()
	stopped := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	select {
	case <-listening:
	case err := <-exited:
		t.Fatalf("the replica ended before it listened: %v\n%s", err, logs.String())
	case <-ctx.Done():
		stopped()
		t.Fatalf("waiting for the replica to listen: %v\n%s", ctx.Err(), logs.String())
	}
	require.NoError(t, stdin.Close()) // what the run's death does
	select {
	case err := <-exited:
		assert.NoError(t, err, "it shut down cleanly\n%s", logs.String())
	case <-time.After(30 * time.Second):
		stopped()
		t.Fatal("the replica still served 30s after its run was gone")
	}
}

// An interrupted run (SIGINT, SIGTERM) ends with the interrupt, not with a
// verification it could not do. Negative control: the run verified under
// the ended context, every read failed, and it reported what it read as
// lost and returned a summary that was not clean (exit
// status 1: "an invariant was broken"); interrupted in the warm-up, it
// counted both live queries as silent gaps.
func TestAnInterruptedRunEndsWithTheInterruptAndReportsNoLoss(t *testing.T) {
	args := pgArgs(t, "-schedule", "short", "-publish-every", "200ms", "-notify-every", "200ms")
	ctx, cancel := context.WithTimeout(t.Context(), shortBudget)
	defer cancel()
	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	out := &testkit.CancelOn{Marker: "warm-up", Cancel: interrupt}
	var logs bytes.Buffer
	sum, err := run(runCtx, args, out, &logs)
	t.Logf("output:\n%s", out.String())
	require.ErrorIs(t, err, context.Canceled, "logs:\n%s", logs.String())
	assert.NotContains(t, out.String(), "summary:", "no summary of a verification it could not do")
	assert.True(t, sum.clean(), "no invariant reported broken")
}
