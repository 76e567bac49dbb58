package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/rx/rxtest"
)

// asProgramEnv, set in a test's environment, makes this test binary the
// load program: the child -separate-pollers starts (os.Executable) is then
// the program, not the tests.
const asProgramEnv = "MESHRX_LOADTEST_AS_PROGRAM"

func TestMain(m *testing.M) {
	if os.Getenv(asProgramEnv) == "1" {
		main() // exits on an error
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// bound is the longest a test waits for something that must happen.
const bound = 30 * time.Second

// stuckServer answers nothing until the request's client goes away, and
// reports each request's arrival.
func stuckServer(t *testing.T) (*httptest.Server, <-chan struct{}) {
	arrived := make(chan struct{}, 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv, arrived
}

func TestAPollStillRunningAtTheEndCountsWithItsElapsedTime(t *testing.T) {
	srv, arrived := stuckServer(t)
	clk := rxtest.NewClock()
	start := clk.Now()
	l := load{url: srv.URL, key: "k", pollers: 2, interval: 100 * time.Millisecond, duration: time.Second,
		grace: 500 * time.Millisecond, connsPerPoller: 16, clk: clk}

	done := make(chan []sample, 1)
	go func() { done <- l.run(t.Context(), start) }()
	clk.Advance(l.duration)
	// Open loop: every scheduled poll is sent although none has been
	// answered. A closed loop (next poll after the last answer) would have
	// sent two, and this wait would trip.
	for i := range 20 {
		select {
		case <-arrived:
		case <-time.After(bound):
			require.FailNowf(t, "polls missing", "only %d of 20 scheduled polls reached the server", i)
		}
	}
	assert.Empty(t, done, "the run ended before its grace")
	clk.Advance(l.grace)

	var samples []sample
	select {
	case samples = <-done:
	case <-time.After(bound):
		require.FailNow(t, "the run did not end at its cut-off")
	}
	require.Len(t, samples, 20, "no poll is dropped")
	var got, want []time.Duration
	for _, s := range samples {
		assert.True(t, s.unfinished)
		assert.True(t, s.failed())
		got = append(got, s.latency)
	}
	// Each poll counts from its scheduled instant to the cut-off.
	cutoff := l.duration + l.grace
	for k := range 10 {
		want = append(want, cutoff-time.Duration(k)*l.interval, cutoff-50*time.Millisecond-time.Duration(k)*l.interval)
	}
	slices.Sort(got)
	slices.Sort(want)
	assert.Equal(t, want, got)

	st := summarize(samples)
	// Each poll's request was written while the clock stood between its
	// scheduled instant and the run's end: its goroutine reads the clock
	// when it writes, and the test's single Advance may still be passing
	// the earlier instants then (a CI run under load met a poll written at
	// 0.05 s). So the part before the write is at most the run, and the part
	// after it at least the grace (stuck from the write to the cut-off).
	for _, s := range samples {
		assert.True(t, s.written >= 0 && s.written <= l.duration-s.at.Sub(start), "written %s after its instant %s", s.written, s.at.Sub(start))
	}
	for _, q := range []time.Duration{st.answerP50, st.answerP99, st.answerP999} {
		assert.True(t, q >= l.grace && q <= cutoff, "an answer quantile of %s", q)
	}
	assert.LessOrEqual(t, st.beforeP99, l.duration)
	st.answerP50, st.answerP99, st.answerP999, st.beforeP99 = 0, 0, 0, 0
	assert.Equal(t, stats{requests: 20, errors: 20, unfinished: 20, p50: 1 * time.Second, p90: 1400 * time.Millisecond,
		p99: 1500 * time.Millisecond, p999: 1500 * time.Millisecond, max: 1500 * time.Millisecond}, st)
}

func TestPollsAnsweredInTimeAreNotCountedAsErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		_, _ = w.Write([]byte(`{"bundles":[]}`))
	}))
	t.Cleanup(srv.Close)
	clk := rxtest.NewClock()
	l := load{url: srv.URL, key: "k", pollers: 1, interval: 100 * time.Millisecond, duration: time.Second, grace: time.Second, connsPerPoller: 1, clk: clk}
	done := make(chan []sample, 1)
	start := clk.Now()
	go func() { done <- l.run(t.Context(), start) }()
	clk.Advance(l.duration)
	var samples []sample
	select {
	case samples = <-done:
	case <-time.After(bound):
		require.FailNow(t, "the run did not end")
	}
	st := summarize(samples)
	assert.Equal(t, 10, st.requests)
	assert.Zero(t, st.errors)
	assert.Zero(t, st.unfinished)
}

func TestAPollerSendsTheETagItWasGiven(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		_, _ = w.Write([]byte(`{"bundles":[]}`))
	}))
	t.Cleanup(srv.Close)
	clk := rxtest.NewClock()
	l := load{url: srv.URL, key: "k", clk: clk}
	target, err := parsePollTarget(srv.URL)
	require.NoError(t, err)
	conns := newPollConns(t.Context(), target, 1)
	defer conns.closeIdle()
	held := &pollerState{l: l, target: target, full: target.request("k", "", "")}
	held.set("")
	first := l.poll(t.Context(), conns, held, clk.Now())
	second := l.poll(t.Context(), conns, held, clk.Now())
	require.NoError(t, first.err)
	require.NoError(t, second.err)
	assert.Equal(t, http.StatusOK, first.status)
	assert.Equal(t, http.StatusNotModified, second.status, "the second poll revalidates, as consumers do")
	assert.False(t, second.failed(), "a 304 is an answer, not an error")
}

func TestTheLoadtestPrintsItsTableAndTheSummaryLast(t *testing.T) {
	var out, errs bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err := run(ctx, []string{"-modules", "20", "-pollers", "4", "-duration", "300ms", "-warmup", "100ms", "-latency", "1ms", "-interval", "50ms", "-grace", "300ms"}, &out, &errs)
	require.NoError(t, err, "stderr: %s", errs.String())
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), 4, out.String())
	assert.Regexp(t, `^mode\s+requests\s+p50\s+p90\s+p99\s+p999\s+max\s+errors\s+derivations$`, lines[0])
	assert.Regexp(t, `^served\s+24\s`, lines[1], "4 pollers × 6 polls each")
	assert.Regexp(t, `^scan\s+24\s`, lines[2])
	summary := regexp.MustCompile(`^summary: served_p50_ms=[0-9.]+ served_p99_ms=[0-9.]+ served_p999_ms=[0-9.]+ scan_p50_ms=[0-9.]+ scan_p99_ms=[0-9.]+ derivations=(\d+) requests=(\d+) publications=0 bytes_per_poll_after_change=0 index_bytes=\d+ egress_mb_per_s=[0-9.]+$`)
	m := summary.FindStringSubmatch(lines[len(lines)-1])
	require.NotNil(t, m, "last line %q", lines[len(lines)-1])
	assert.Equal(t, "1", m[1], "the served registry derived once, before the run")
	assert.Equal(t, "24", m[2])
}

// summaryFields reads the summary line's name=value fields.
func summaryFields(t *testing.T, out string) map[string]float64 {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(last, "summary: "), out)
	fields := map[string]float64{}
	for _, f := range strings.Fields(strings.TrimPrefix(last, "summary: ")) {
		k, v, ok := strings.Cut(f, "=")
		require.True(t, ok, f)
		n, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err, f)
		fields[k] = n
	}
	return fields
}

// With -publish-every the load program publishes through the publish route
// while the pollers run, and a poll after a change downloads the delta, a
// fraction of the document (2,000 modules: under load one poll may carry
// several publications' entries, still a small part). Control: with -deltas=false the same run
// downloads the whole document after every change. (The control reuses the
// first run's landed modules through -dir: landing 2,000 is most of a run.)
func TestPublishingWhilePollingSendsDeltasNotTheDocument(t *testing.T) {
	dir := t.TempDir()
	run1 := func(deltas string) map[string]float64 {
		var out, errs bytes.Buffer
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		err := run(ctx, []string{"-modules", "2000", "-pollers", "4", "-duration", "600ms", "-warmup", "100ms", "-latency", "0s", "-interval", "50ms",
			"-grace", "1s", "-baseline=false", "-publish-every", "100ms", "-deltas=" + deltas, "-dir", dir}, &out, &errs)
		require.NoError(t, err, "stderr: %s", errs.String())
		t.Log(out.String())
		return summaryFields(t, out.String())
	}
	got := run1("true")
	assert.GreaterOrEqual(t, got["publications"], 3.0)
	assert.Equal(t, 1.0, got["derivations"], "publications are patched into the snapshot, not re-derived")
	assert.Positive(t, got["bytes_per_poll_after_change"])
	assert.Less(t, got["bytes_per_poll_after_change"]*20, got["index_bytes"], "a delta is a small part of the document")

	control := run1("false")
	assert.GreaterOrEqual(t, control["bytes_per_poll_after_change"], control["index_bytes"], "control: the whole document after each change")
}

// With -separate-pollers the pollers and the publisher run in a child
// process, which reports what they saw: the same summary, every scheduled
// poll answered, the publications made, the registry derived once, and the
// collector's line says it measured the registry's process alone. Control:
// a child that is not the load program (this test binary without the
// environment that makes it one) reports nothing, and the run fails
// reading its report: the polls counted are the child's.
func TestThePollersCanRunInAChildProcess(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "cpu.prof")
	args := []string{"-modules", "50", "-pollers", "4", "-duration", "600ms", "-warmup", "100ms", "-latency", "0s", "-interval", "50ms",
		"-grace", "1s", "-baseline=false", "-publish-every", "100ms", "-separate-pollers", "-cpuprofile", profile}
	t.Setenv(asProgramEnv, "1")
	var out, errs bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	require.NoError(t, run(ctx, args, &out, &errs), "stderr: %s", errs.String())
	t.Log(out.String())
	got := summaryFields(t, out.String())
	assert.Equal(t, 48.0, got["requests"], "4 pollers × 12 polls each")
	assert.Equal(t, 1.0, got["derivations"])
	assert.GreaterOrEqual(t, got["publications"], 3.0)
	assert.Positive(t, got["bytes_per_poll_after_change"])
	assert.Contains(t, out.String(), "the registry's process; the pollers ran in a child process")
	assert.Regexp(t, `(?m)^served\s+48\s.*\s0\s+1$`, out.String(), "no poll failed")
	assert.FileExists(t, profile, "the registry's process's profile")
	assert.FileExists(t, profile+".pollers", "the pollers' process's profile")

	t.Setenv(asProgramEnv, "")
	out.Reset()
	err := run(ctx, args, &out, &errs)
	require.ErrorContains(t, err, "the pollers' process", "control: a child that is not the program")
}

// -volumes dir,s3 runs the served mode on the directory and then on a copy
// of it in a bucket of an S3-protocol server the program starts, publishing
// through the registry on each: both answer every poll and every
// publication, and each derives once. Control: an unknown volume is refused
// before anything runs.
func TestTheServedModeRunsOnAnS3VolumeBesideTheDirectory(t *testing.T) {
	var out, errs bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err := run(ctx, []string{"-modules", "30", "-pollers", "3", "-duration", "600ms", "-warmup", "100ms", "-latency", "0s", "-interval", "50ms",
		"-grace", "1s", "-baseline=false", "-publish-every", "100ms", "-volumes", "dir,s3"}, &out, &errs)
	require.NoError(t, err, "stderr: %s", errs.String())
	t.Log(out.String())
	lines := map[string]map[string]float64{}
	for _, l := range strings.Split(out.String(), "\n") {
		rest, ok := strings.CutPrefix(l, "volume: ")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		m := map[string]float64{}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			n, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, f)
			m[k] = n
		}
		lines[fields[0]] = m
	}
	require.Len(t, lines, 2, out.String())
	for name, m := range lines {
		assert.Equal(t, 1.0, m["derivations"], name)
		assert.GreaterOrEqual(t, m["publications"], 3.0, name)
		assert.Zero(t, m["publish_failed"], name)
		assert.Positive(t, m["publish_p50_ms"], name)
	}
	assert.Regexp(t, `(?m)^served/s3\s+\d+\s.*\s0\s+1$`, out.String(), "no poll of the S3 run failed")

	err = run(ctx, []string{"-modules", "1", "-volumes", "dir,nfs"}, &out, &errs)
	require.ErrorContains(t, err, `"nfs"`)
}

// advancedBeforeTimer is a clock that another goroutine moves on, once, by
// `by`, just before a timer is made: between a waiter's Until and its
// Timer, as a run's Advance may on a loaded machine.
type advancedBeforeTimer struct {
	*rxtest.Clock
	by   time.Duration
	once sync.Once
}

func (c *advancedBeforeTimer) Timer(d time.Duration) *clock.Timer {
	c.once.Do(func() { c.Advance(c.by) })
	return c.Clock.Timer(d)
}

// TestAWaitWhoseInstantPassesWhileItsTimerIsMadeEndsAtOnce: the poller's
// wait for a scheduled instant ends when the clock has passed it, though
// the timer it made counts from the later time. Negative control: without
// the check after Timer, the wait is due 100ms after the clock stopped and
// waits for an Advance that never comes (a poll left out of a virtual run:
// TestAPollStillRunningAtTheEndCountsWithItsElapsedTime then waited for its
// 20th poll).
func TestAWaitWhoseInstantPassesWhileItsTimerIsMadeEndsAtOnce(t *testing.T) {
	clk := &advancedBeforeTimer{Clock: rxtest.NewClock(), by: 200 * time.Millisecond}
	l := load{clk: clk}
	at := clk.Now().Add(100 * time.Millisecond)
	done := make(chan bool, 1)
	go func() { done <- l.waitUntil(t.Context(), at) }()
	select {
	case ok := <-done:
		assert.True(t, ok)
	case <-time.After(bound):
		require.FailNow(t, "the wait did not end though the clock had passed its instant")
	}
	assert.Equal(t, 200*time.Millisecond, clk.Elapsed())
}

// The warm-up is polled before the measured run, on the same schedule,
// the pollers joining one after another over it, and summarised apart: its polls are in no measured figure, and are reported
// in stats.warm. Negative control: the same samples without their warm
// mark put the warm-up's slow polls into p99 (as a run without a warm-up
// did: 256 pollers dialling at once set p99 by themselves).
func TestTheWarmUpIsPolledFirstAndReportedApart(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotModified)
	}))
	t.Cleanup(srv.Close)
	clk := rxtest.NewClock()
	l := load{url: srv.URL, key: "k", pollers: 2, interval: 100 * time.Millisecond, warmup: 300 * time.Millisecond,
		duration: time.Second, grace: time.Second, connsPerPoller: 1, clk: clk}
	start := clk.Now()
	done := make(chan []sample, 1)
	go func() { done <- l.run(t.Context(), start) }()
	clk.Advance(l.warmup + l.duration)
	var samples []sample
	select {
	case samples = <-done:
	case <-time.After(bound):
		require.FailNow(t, "the run did not end")
	}
	// Poller 0 (phase 0) polls at 0, 100 and 200 ms in the warm-up; poller
	// 1 (phase 50 ms) joins at 150 ms (half of it): 150 and 250 ms. Then
	// 10 polls each in the measured second.
	require.Len(t, samples, 25)
	var warmAt []time.Duration
	for _, s := range samples {
		assert.Equal(t, s.at.Before(start.Add(l.warmup)), s.warm, "poll at %s", s.at.Sub(start))
		if s.warm {
			warmAt = append(warmAt, s.at.Sub(start))
		}
	}
	slices.Sort(warmAt)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{0, 100 * ms, 150 * ms, 200 * ms, 250 * ms}, warmAt, "the second poller joins half way through the warm-up")
	st := summarize(samples)
	assert.Equal(t, 20, st.requests)
	require.NotNil(t, st.warm)
	assert.Equal(t, 5, st.warm.requests)

	// Latencies: slow warm-up polls stay out of the measured percentiles.
	var shaped []sample
	for k := range 100 {
		s := sample{status: http.StatusNotModified, latency: time.Millisecond, warm: k < 10}
		if s.warm {
			s.latency = time.Second
		}
		shaped = append(shaped, s)
	}
	st = summarize(shaped)
	assert.Equal(t, time.Millisecond, st.p99)
	assert.Equal(t, time.Millisecond, st.max)
	assert.Equal(t, 90, st.requests)
	assert.Equal(t, time.Second, st.warm.p99)

	for i := range shaped {
		shaped[i].warm = false
	}
	control := summarize(shaped)
	assert.Equal(t, time.Second, control.p99, "control: the same polls counted as measured")
	assert.Nil(t, control.warm)
}

// alloc_mb_per_s is the bytes allocated while the pollers ran over the time
// they ran: the collector's figures are read before the warm-up and after
// the grace, so the bytes are those of the whole span, not of -duration
// alone. The test reads the same counter around the whole run (landing and
// starting the replica included): no rate over a span of at least
// warmup+duration can exceed that total over warmup+duration. Negative
// control: dividing by -duration (as the line did) printed a rate about
// eleven times too high with this warm-up, beyond the bound.
func TestTheAllocationRateIsOverTheSpanItsBytesWereCountedIn(t *testing.T) {
	const warmup, duration = 3 * time.Second, 300 * time.Millisecond
	allocs := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	var out, errs bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	before := allocs()
	err := run(ctx, []string{"-modules", "20", "-pollers", "8", "-duration", duration.String(), "-warmup", warmup.String(),
		"-latency", "0s", "-interval", "5ms", "-grace", "300ms", "-baseline=false"}, &out, &errs)
	total := float64(allocs()-before) / 1e6
	require.NoError(t, err, "stderr: %s", errs.String())
	m := regexp.MustCompile(`alloc_mb_per_s=([0-9.]+)`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	rate, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	bound := total / (warmup + duration).Seconds()
	t.Logf("alloc_mb_per_s=%.1f; the whole run allocated %.1f MB, at most %.1f MB/s over warm-up and run", rate, total, bound)
	assert.LessOrEqual(t, rate, bound+0.1, "the rate's figure is rounded to 0.1")
}

// A flag value the run cannot use is refused naming its flag, and before
// the modules are landed (minutes at 100,000). Negative control: before,
// -volumes foo was refused after the landing, -pg without -absorb was
// ignored, an unparsable -pg was refused as "pgstore: parsing the
// database URL" (after the landing), and a -duration whose end with the
// grace wraps past the largest time.Duration failed at once with "served
// on dir: context canceled".
func TestABadFlagValueIsRefusedNamingItsFlagBeforeTheLanding(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"-volumes", "dir,foo"}, "-volumes"},
		{[]string{"-pg", "postgres://localhost/x"}, "-pg"},
		{[]string{"-pg", "garbage", "-absorb", "1"}, "-pg"},
		{[]string{"-duration", "2562047h", "-grace", "1h"}, "-duration"},
	} {
		var out, errs bytes.Buffer
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		err := run(ctx, append([]string{"-modules", "5", "-latency", "0s"}, c.args...), &out, &errs)
		cancel()
		if assert.Error(t, err, "%q", c.args) {
			assert.Contains(t, err.Error(), c.flag, "%q", c.args)
		}
		assert.NotContains(t, errs.String(), "landed", "%q: refused before the landing", c.args)
	}
	// Control: a -volumes list and -pg with -absorb that are usable parse.
	_, err := parseFlags([]string{"-volumes", "dir,s3,s3://b/p?endpoint=http://127.0.0.1:1&region=r", "-pg", "postgres://localhost/x", "-absorb", "1"}, io.Discard)
	require.NoError(t, err)
}

// A profile, trace or poll log that cannot be written (its directory does
// not exist) is refused naming its flag before anything is landed or
// polled. Negative control: before, each failed only when written — the
// CPU profile and trace after the landing, the poll log and the heap
// profile after the whole measured run, whose figures were then never
// printed — and the error named a path, not the flag.
func TestAnOutputFileThatCannotBeWrittenIsRefusedBeforeTheRun(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing", "out")
	for _, flag := range []string{"-cpuprofile", "-memprofile", "-trace", "-poll-log"} {
		var out, errs bytes.Buffer
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		err := run(ctx, []string{"-modules", "5", "-latency", "0s", "-pollers", "2", "-duration", "200ms", "-warmup", "0s",
			"-interval", "50ms", "-baseline=false", flag, missing}, &out, &errs)
		cancel()
		if assert.Error(t, err, flag) {
			assert.Contains(t, err.Error(), flag)
		}
		assert.NotContains(t, errs.String(), "landed", "%s: refused before the landing", flag)
	}
}

// The served line's derivation rate counts the derivations made while the
// pollers ran over the time they ran. With re-derivation on -freshness
// alone (no feed, no journal) the snapshot is derived at most once per
// freshness, so the rate is at most 30 s / freshness per 30 s. Negative
// control, run by hand: with the line dividing every derivation since the
// replica started (the warm-up's included) by -duration, as it did, this
// run printed derivations_per_30s=2200.00, beyond the bound of 330.
func TestTheDerivationRateIsOverTheSpanItsDerivationsWereCountedIn(t *testing.T) {
	const freshness = 100 * time.Millisecond
	var out, errs bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err := run(ctx, []string{"-modules", "20", "-pollers", "4", "-duration", "300ms", "-warmup", "2s", "-latency", "0s",
		"-interval", "20ms", "-grace", "300ms", "-baseline=false", "-feed=false", "-journal=false", "-freshness", freshness.String()}, &out, &errs)
	require.NoError(t, err, "stderr: %s", errs.String())
	m := regexp.MustCompile(`derivations_per_30s=([0-9.]+)`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	rate, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	require.Greater(t, summaryFields(t, out.String())["derivations"], 2.0, "the run re-derived (else the bound says nothing)")
	bound := 1.1 * (30 * time.Second).Seconds() / freshness.Seconds()
	assert.LessOrEqual(t, rate, bound, "derivations_per_30s=%.2f", rate)
}
