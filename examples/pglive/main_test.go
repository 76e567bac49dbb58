package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
)

func TestMain(m *testing.M) {
	// The run starts its replicas and writer as this binary again.
	if role := os.Getenv(roleEnv); role != "" {
		if err := runRole(role, os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "pglive:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// A test runs the program as a user does: main with these arguments.
	if args := os.Getenv(mainArgsEnv); args != "" {
		os.Args = append([]string{"pglive"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// mainArgsEnv makes this test binary run main with its (space-separated)
// arguments.
const mainArgsEnv = "PGLIVE_TEST_MAIN_ARGS"

// summaryLine is the last line's exact shape.
var summaryLine = regexp.MustCompile(`^summary: replicas=2 live_queries=\d+ writes=\d+ notice_to_frame_p50_ms=[\d.]+ notice_to_frame_p99_ms=[\d.]+ notice_dispatch_p50_ms=[\d.]+ notice_dispatch_p99_ms=[\d.]+ put_p50_ms=[\d.]+ put_p99_ms=[\d.]+ write_to_frame_p50_ms=[\d.]+ write_to_frame_p99_ms=[\d.]+ put_return_to_frame_p50_ms=-?[\d.]+ put_return_to_frame_p99_ms=-?[\d.]+ replica_cpu_us_per_notice=[\d.]+ lost=\d+ duplicates=\d+ misrouted=\d+ write_errors=\d+ observer_errors=\d+$`)

// pgArgs adds -pg when the tests are told to use an external server;
// otherwise the run starts its own, as it does for users. Without
// PostgreSQL the test skips (or fails under MESHRX_REQUIRE_PG=1).
func pgArgs(t *testing.T, args ...string) []string {
	if db := pgtest.ProgramDatabase(t, "pglive"); db != "" {
		args = append(args, "-pg", db)
	}
	return args
}

// A short schedule across three processes: every write's frame reaches
// both replicas exactly once, in the written viewer's live query, and
// nothing fails. (The checks can fail: see
// TestTheRecorderCountsMissingDuplicateAndMisroutedFrames.)
func TestEveryWriteReachesBothReplicasLiveQueriesOnce(t *testing.T) {
	const live, writes = 300, 400
	args := pgArgs(t, "-live", fmt.Sprint(live), "-writes", fmt.Sprint(writes), "-interval", "2ms", "-budget", "3m")
	var out, logs bytes.Buffer
	sum, err := run(t.Context(), args, &out, &logs)
	require.NoError(t, err, "logs:\n%s\noutput:\n%s", logs.String(), out.String())
	t.Log("\n" + out.String())

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Regexp(t, summaryLine, lines[len(lines)-1], "the last line is the summary")
	assert.Equal(t, live, sum.live)
	assert.Equal(t, writes, sum.writes)
	assert.Zero(t, sum.writeErrors)
	assert.Zero(t, sum.lost, "every write's frame reached both replicas")
	assert.Zero(t, sum.duplicates)
	assert.Zero(t, sum.misrouted)
	assert.Zero(t, sum.observerErrors)
	assert.Positive(t, sum.p50)
	assert.GreaterOrEqual(t, sum.p99, sum.p50)
	assert.Positive(t, sum.cpuPerNotice, "the replicas' CPU was counted")
	assert.Positive(t, sum.noticeP50, "the replicas' stores timed notice to frame")
	assert.GreaterOrEqual(t, sum.noticeP99, sum.noticeP50)
	assert.Positive(t, sum.dispatchP50, "and the listeners' dispatch")
	assert.Positive(t, sum.putP50)
}

// The recorder behind the invariants counts what they forbid: a frame
// outside its viewer's namespace, a second frame for one write, content
// that is not a write of this run; and a write never seen stays unseen.
func TestTheRecorderCountsMissingDuplicateAndMisroutedFrames(t *testing.T) {
	rec := newRecorder(3)
	now := time.Now()
	node := func(path string, seq int) mesh.Node {
		return mesh.Node{Path: path, Content: fmt.Appendf(nil, `{"seq":%d,"t":%d}`, seq, now.Add(-time.Millisecond).UnixNano())}
	}
	rec.frame(now, node("vp00/v000000/n0", 0), "vp00/v000000/")
	rec.frame(now, node("vp00/v000000/n0", 0), "vp00/v000000/")        // again
	rec.frame(now, node("vp01/v000001/n1", 1), "vp00/v000000/")        // another viewer's
	rec.frame(now, node("vp00/v000000/n9", 9), "vp00/v000000/")        // not of this run
	rec.frame(now, mesh.Node{Path: "vp00/v000000/x"}, "vp00/v000000/") // no payload
	assert.Equal(t, 1, rec.distinct)
	assert.Equal(t, 1, rec.duplicates)
	assert.Equal(t, 3, rec.misrouted)
	assert.Equal(t, []uint8{1, 0, 0}, rec.seen, "writes 1 and 2 are missing")
	assert.Equal(t, []int64{1000}, rec.latency)
	assert.Equal(t, []int64{now.UnixNano(), 0, 0}, rec.frameAt)
}

// A schedule of writes longer than -budget cannot finish: it is refused,
// naming the flags, instead of failing when the budget runs out (after ten
// minutes by default). Negative control: without the check, -writes
// 1000000 -interval 1ms (16m40s) was accepted against the default 10m
// budget, and -writes 1000000 -interval 10000h, whose schedule wraps past
// the largest duration, too.
func TestAScheduleLongerThanTheBudgetIsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-writes", "1000000", "-interval", "1ms"},
		{"-writes", "1000000", "-interval", "10000h", "-budget", "2562047h"},
	} {
		_, err := parseFlags(args, &bytes.Buffer{})
		if assert.Error(t, err, "%q", args) {
			for _, flag := range []string{"-writes", "-interval", "-budget"} {
				assert.Contains(t, err.Error(), flag, "%q", args)
			}
		}
	}
	_, err := parseFlags([]string{"-writes", "1000000", "-interval", "1ms", "-budget", "30m"}, &bytes.Buffer{})
	assert.NoError(t, err, "control: the same schedule with the budget it needs")
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{{"-live", "0"}, {"-interval", "0s"}, {"extra"}} {
		_, err := parseFlags(args, &bytes.Buffer{})
		assert.Error(t, err, "%q", args)
	}
}

// A child's output the coordinator does not read never blocks the child:
// 100 lines written while nobody reads all go through the pipe at once;
// the reader keeps the newest maxUnread, counts the others, and the line
// waited for (the last) is still found. Negative control: the former
// reader (a channel of 16 lines filled by the reading goroutine) stops
// reading at the 17th line, so the writes below never finish and the
// bounded wait fails.
func TestAChildsUnreadOutputNeverBlocksTheChild(t *testing.T) {
	pr, pw := io.Pipe()
	c := &child{name: "replica1", exited: make(chan struct{})}
	c.out = readLines(pr, func() { close(c.exited) })
	wrote := make(chan error, 1)
	go func() {
		for i := range 99 {
			if _, err := fmt.Fprintf(pw, "log line %d\n", i); err != nil {
				wrote <- err
				return
			}
		}
		_, err := fmt.Fprintln(pw, "result {}")
		wrote <- errors.Join(err, pw.Close())
	}()
	select {
	case err := <-wrote:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("waiting (at most 30s) for the child's 100 lines to be taken from its pipe: the reader blocked it")
	}
	// The last write returns once its bytes are read, maybe before the
	// reader has kept the line: wait for the reader's end, so no line is
	// taken below while one is still being added (83 dropped, not 84).
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("waiting (at most 30s) for the reader to see the end of the closed pipe")
	}
	rest, err := c.expect(t.Context(), "result ", time.Second)
	require.NoError(t, err)
	assert.Equal(t, "{}", rest)
	assert.Equal(t, "84 lines of its output were dropped unread", c.out.lost())

	_, err = c.expect(t.Context(), "result ", time.Second)
	assert.ErrorContains(t, err, "the process ended", "nothing after the end")
	assert.ErrorContains(t, err, "84 lines of its output were dropped unread", "a failed wait says what was dropped")
}

// A run told to stop (SIGTERM, as a supervisor or `kill` sends; SIGINT
// alike) stops its children and its throwaway PostgreSQL and removes the
// server's directory, as the doc promises ("removes it afterwards").
// Negative control: main without signal.NotifyContext (as it was) died at
// the signal, leaving the initdb'ed directory (≈ 50 MB) behind in TMPDIR:
// the test failed listing it.
func TestATerminatedRunRemovesItsThrowawayServer(t *testing.T) {
	if len(pgArgs(t)) > 0 {
		t.Skip("the tests give the run a server (MESHRX_PG_URL): it starts none of its own")
	}
	tmp, err := os.MkdirTemp("", "pglive-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	require.NoError(t, os.Chmod(tmp, 0o755)) // the server may run as another user

	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp,
		mainArgsEnv+"=-live 20 -writes 20000 -interval 5ms -budget 2m")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	ready := make(chan struct{})
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		seen := false
		for sc.Scan() {
			if !seen && strings.Contains(sc.Text(), "ready in") {
				seen = true
				close(ready)
			}
		}
		exited <- cmd.Wait()
	}()
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("the run ended before its replicas were ready: %v\n%s", err, logs.String())
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("waiting (at most 2m) for the replicas to be ready\n%s", logs.String())
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err = <-exited:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("waiting (at most 1m) for the run to end after SIGTERM\n%s", logs.String())
	}
	t.Logf("exit: %v\n%s", err, logs.String())
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	assert.Empty(t, names, "what the run left in its TMPDIR")
}

// The summary line main.go's doc shows, its X and N read as figures, has
// the shape the program prints. Negative control: the doc as it was
// (listener_cpu_us_per_notice, and no dispatch, Put or write → frame
// fields) failed.
func TestTheDocsSummaryLineIsTheOneTheProgramPrints(t *testing.T) {
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	var doc string
	for line := range strings.SplitSeq(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "//\tsummary: "); ok {
			doc = "summary: " + rest
		}
	}
	require.NotEmpty(t, doc, "main.go's doc shows the summary line")
	doc = regexp.MustCompile(`=X\b`).ReplaceAllString(doc, "=1.5")
	doc = regexp.MustCompile(`=N\b`).ReplaceAllString(doc, "=7")
	assert.Regexp(t, summaryLine, doc)
	assert.Regexp(t, summaryLine, summary{replicas: 2}.String(), "control: a line String wrote")
}
