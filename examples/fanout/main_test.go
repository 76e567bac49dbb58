package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
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

// pg is the PostgreSQL server the tests share; each run gets a database of
// its own on it.
var pg pgtest.Harness

func TestMain(m *testing.M) { goleak.VerifyTestMain(pg.Wrap(m)) }

// runBudget bounds one small run of the program.
const runBudget = 3 * time.Minute

// small is a run small enough for a test: the invariants asserted hold at
// any size.
type small struct {
	partitions, rows, iterations, readers, writes, live string
}

func (s small) args(dbURL string) []string {
	args := []string{"-partitions", s.partitions, "-rows", s.rows, "-iterations", s.iterations,
		"-readers", s.readers, "-writes", s.writes, "-live", s.live, "-workers", "4", "-phase-budget", "2m"}
	if dbURL != "" {
		args = append(args, "-pg", dbURL)
	}
	return args
}

// runProgram runs the program's core with args and returns its output.
func runProgram(t *testing.T, ctx context.Context, args []string) (stdout string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, runBudget)
	defer cancel()
	var out, errOut bytes.Buffer
	err = run(ctx, args, &out, &errOut)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	return out.String(), err
}

// lastLine returns the last non-empty line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestThePinnedReadStaysInTheFastPathAndTheFanOutGrowsWithPartitionsWhileTypedNoticesReReadNothing(t *testing.T) {
	t.Parallel()
	runs := map[int]summary{}
	for _, partitions := range []int{6, 12} {
		cfg := small{partitions: strconv.Itoa(partitions), rows: "5", iterations: "6", readers: "3", writes: "50", live: "3"}
		out, err := runProgram(t, t.Context(), cfg.args(pg.Database(t)))
		require.NoError(t, err)
		last := lastLine(out)
		s, err := parseSummary(last)
		require.NoError(t, err, "the last line is the summary")
		assert.Equal(t, last, s.String(), "the summary line reads back to itself")
		runs[partitions] = s

		assert.LessOrEqual(t, s.PinnedLocks, 16, "%d partitions: a pinned read fits in the 16 fast-path slots", partitions)
		assert.Positive(t, s.PinnedLocks, "%d partitions: a pinned read takes locks (so zero is not how it passes)", partitions)
		assert.Greater(t, s.FanOutLocks, s.PinnedLocks, "%d partitions", partitions)
		assert.Positive(t, s.PinnedP50ms)
		assert.Positive(t, s.FanOutP50ms)
		assert.Positive(t, s.WriterP99Alone)

		// The untyped run is the negative control of the typed one: the same
		// live queries and writes, with the node type ignored, re-read once
		// per write per live query, so the count does see re-reads.
		assert.Zero(t, s.RequeriesTyped, "%d partitions: writes of a type no live query names re-read nothing", partitions)
		assert.Equal(t, int64(50*3), s.RequeriesUntyped, "%d partitions: without the type, every write re-reads every live query", partitions)

		for _, row := range []string{"relation locks held, pinned read", "relation locks held, fan-out read",
			"writer insert, beside fan-out readers p99", "re-reads, untyped feed"} {
			assert.Contains(t, out, row, "the table has a row per measurement")
		}
		assert.Contains(t, out, "inserts failed: 0", "the writer's inserts succeeded")
		assert.Contains(t, out, "reads failed, beside fan-out readers", "the failed reads beside the writer have a row")
		assert.Zero(t, s.ReadsFailedPinned, "%d partitions: pinned reads beside the writer succeed", partitions)
		assert.Zero(t, s.ReadsFailedFanOut, "%d partitions: typed fan-outs beside the writer succeed", partitions)
	}
	assert.Greater(t, runs[12].FanOutLocks, runs[6].FanOutLocks, "a fan-out's locks grow with the partitions")
	assert.Equal(t, runs[12].PinnedLocks, runs[6].PinnedLocks, "a pinned read's locks do not")
}

func TestWithoutPgItStartsAThrowawayServerAndRemovesItAtExit(t *testing.T) {
	t.Parallel()
	if _, err := pgtest.FindBinaries(os.Getenv("PATH"), pgtest.DebianRoot); err != nil {
		if os.Getenv("MESHRX_REQUIRE_PG") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	cfg := small{partitions: "2", rows: "2", iterations: "2", readers: "2", writes: "5", live: "2"}
	out, err := runProgram(t, t.Context(), cfg.args(""))
	require.NoError(t, err)

	first := strings.SplitN(out, "\n", 2)[0]
	dir, ok := strings.CutPrefix(first, "server: throwaway PostgreSQL in ")
	require.True(t, ok, "the first line says a throwaway server was started: %q", first)
	dir = strings.TrimSuffix(dir, " (stopped and removed at exit)")
	assert.True(t, strings.HasPrefix(filepath.Base(dir), "meshrx-pgtest-"), "the server's directory: %q", dir)
	// Had the program not stopped the server, its directory (data, socket,
	// log) would still be here.
	_, statErr := os.Stat(dir)
	assert.ErrorIs(t, statErr, os.ErrNotExist, "the throwaway server's directory is removed")
	_, err = parseSummary(lastLine(out))
	assert.NoError(t, err)
}

func TestAnInterruptedRunEndsWithTheInterruptAndLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	dbURL := pg.Database(t)
	ctx, cancel := context.WithTimeout(t.Context(), runBudget)
	defer cancel()
	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	// Interrupted once the fan-out readers run and the writer starts:
	// readers and writer are all busy, and must all stop.
	stderr := &testkit.CancelOn{Marker: "c: writer beside 3 fan-out readers: readers running; the writer starts", Cancel: interrupt}
	var out bytes.Buffer
	cfg := small{partitions: "4", rows: "3", iterations: "200", readers: "3", writes: "10", live: "2"}
	err := run(runCtx, cfg.args(dbURL), &out, stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled, "the run ends with the interrupt")
	assert.NotContains(t, out.String(), "summary:", "an interrupted run prints no summary")
	// Control: the marker was reached, so the interrupt came mid-run, in
	// the phase with the most goroutines; none is left behind: goleak
	// checks when the tests end.
	assert.Contains(t, stderr.String(), stderr.Marker)
	assert.NotContains(t, stderr.String(), "c: writer beside 3 fan-out readers: done")
}

func TestBadFlagsAreRefusedWithAClearError(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-partitions", "0"}, "-partitions must be between 1 and 1000"},
		{[]string{"-partitions", "1001"}, "-partitions must be between 1 and 1000"},
		{[]string{"-rows", "-1"}, "-rows must be at least 1"},
		{[]string{"-live", "0"}, "-live must be at least 1"},
		// The pool's size is an int32 with room for the writer: a count
		// beyond it wrapped negative and was refused as pgstore's
		// Options.MaxConns, after the server had started.
		{[]string{"-readers", "2147483645"}, "-readers must be between 1 and 2147483643"},
		{[]string{"-readers", "0"}, "-readers must be between 1 and"},
		{[]string{"-phase-budget", "0s"}, "-phase-budget must be positive"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-scale", "10"}, "below the 50 Items"},
		{[]string{"-scale", "1000,100"}, "sizes must ascend"},
		{[]string{"-scale", "1e6"}, "is not a number of nodes"},
	} {
		_, err := parseFlags(c.args, io.Discard)
		assert.ErrorContains(t, err, c.want, "args %q", c.args)
	}
	_, err := parseFlags([]string{"-nope"}, io.Discard)
	assert.Error(t, err, "an unknown flag")
	_, err = parseFlags([]string{"-h"}, io.Discard)
	assert.True(t, errors.Is(err, flag.ErrHelp))

	// Control: the parameters parse.
	cfg, err := parseFlags([]string{"-partitions", "188", "-rows", "50"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 188, cfg.partitions)
	assert.Equal(t, 50, cfg.rows)
}

func TestASummaryLineThatIsNotOneIsRefused(t *testing.T) {
	t.Parallel()
	good := summary{PinnedLocks: 8, FanOutLocks: 480, PinnedP50ms: 0.5, FanOutP50ms: 12.25,
		WriterP99Alone: 1, WriterP99Pinned: 2, WriterP99FanOut: 30, RequeriesTyped: 0, RequeriesUntyped: 150,
		ReadsFailedPinned: 0, ReadsFailedFanOut: 3}
	back, err := parseSummary(good.String())
	require.NoError(t, err, "control: a line String wrote parses")
	assert.Equal(t, good, back)

	for _, bad := range []string{
		"",
		"pinned_locks=8",
		strings.Replace(good.String(), "fanout_locks=480 ", "", 1),
		strings.Replace(good.String(), "pinned_locks=8", "pinned_locks=eight", 1),
		strings.Replace(good.String(), "pinned_locks", "fanout_locks", 1),
	} {
		_, err := parseSummary(bad)
		assert.Error(t, err, "line %q", bad)
	}
}

func TestTheScalePhaseReadsTheFiftyItemsAtEverySizeBesideTheHandWrittenSQL(t *testing.T) {
	t.Parallel()
	cfg := small{partitions: "2", rows: "5", iterations: "5", readers: "2", writes: "10", live: "2"}
	out, err := runProgram(t, t.Context(), append(cfg.args(pg.Database(t)), "-scale", "100,2000"))
	require.NoError(t, err)
	_, err = parseSummary(lastLine(out))
	require.NoError(t, err, "the last line is still the summary")
	for _, nodes := range []string{"100", "2000"} {
		assert.Contains(t, out, "pinned read at "+nodes+" nodes (Store.Query) p50")
		assert.Contains(t, out, "hand-written indexed SQL at "+nodes+" nodes p50")
		assert.Contains(t, out, "scale: nodes="+nodes+" store_p50_ms=")
	}
	assert.Contains(t, out, "WHERE ns_key = 'scale' AND type_key = 'item'", "the hand-written statement is printed")
	// The rows written in bulk had no keys: the backfill folded them.
	assert.Contains(t, out, "keys of 50 rows backfilled")
	assert.Contains(t, out, "keys of 1900 rows backfilled")
}
