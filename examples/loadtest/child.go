package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"
)

// The pollers in a process of their own (-separate-pollers): the load
// program starts the registry as before and then runs a copy of itself
// (os.Executable, with -poll-target) that runs the pollers and the
// publisher against it and prints what they saw as one JSON line. The
// registry's process then runs the registry alone: its CPU profile, its
// collector's figures and its latencies are not shared with 256 HTTP
// clients (34-38 % of the samples when they ran in process).

// childStartBudget bounds the child's start and its report beyond the run
// and its grace.
const childStartBudget = time.Minute

// childReport is what the child prints: the pollers' summary and the
// publisher's outcome.
type childReport struct {
	Requests, Errors, Unfinished                int
	P50, P90, P99, P999, Max                    time.Duration
	Changed, Gone                               int
	ChangedBytes, Bytes                         int64
	Published, Failed                           int
	LastError                                   string
	Slowest                                     time.Duration
	Took                                        []time.Duration
	AnswerP50, AnswerP99, AnswerP999, BeforeP99 time.Duration
	// The warm-up's polls (nil: none).
	Warm *childWarm `json:",omitempty"`
}

// childWarm is the warm-up's part of a childReport.
type childWarm struct {
	Requests, Errors, Unfinished int
	P50, P90, P99, P999, Max     time.Duration
}

func (r childReport) stats() stats {
	st := stats{requests: r.Requests, errors: r.Errors, unfinished: r.Unfinished,
		p50: r.P50, p90: r.P90, p99: r.P99, p999: r.P999, max: r.Max,
		changed: r.Changed, gone: r.Gone, changedBytes: r.ChangedBytes, bytes: r.Bytes,
		answerP50: r.AnswerP50, answerP99: r.AnswerP99, answerP999: r.AnswerP999, beforeP99: r.BeforeP99}
	if w := r.Warm; w != nil {
		st.warm = &stats{requests: w.Requests, errors: w.Errors, unfinished: w.Unfinished, p50: w.P50, p90: w.P90, p99: w.P99, p999: w.P999, max: w.Max}
	}
	return st
}

func (r childReport) published() publishOutcome {
	return publishOutcome{published: r.Published, failed: r.Failed, lastError: r.LastError, slowest: r.Slowest, took: r.Took}
}

// childTarget is what the child polls and publishes to.
type childTarget struct {
	url, key, etag string // the index, the consumer's key, the ETag the pollers hold at the start
	base, token    string // the publish route's server and token ("": no publishing)
}

// The environment variables that carry the child's consumer key and publish
// token (kept off its command line).
const (
	envPollKey      = "MESHRX_LOADTEST_POLL_KEY"
	envPublishToken = "MESHRX_LOADTEST_PUBLISH_TOKEN"
)

// runChild runs the pollers (and, with t.token, the publisher) of cfg in a
// child process against t, and returns what it saw and the CPU time the
// child used. The wait for it is
// bounded by the run, its grace and childStartBudget; past that the child
// is killed.
func runChild(ctx context.Context, cfg config, t childTarget, stderr io.Writer) (stats, publishOutcome, time.Duration, error) {
	exe, err := os.Executable()
	if err != nil {
		return stats{}, publishOutcome{}, 0, fmt.Errorf("finding this program to start the pollers' process: %w", err)
	}
	args := []string{
		"-poll-target", t.url, "-poll-etag", t.etag,
		"-modules", strconv.Itoa(cfg.modules), "-pollers", strconv.Itoa(cfg.pollers), "-conns", strconv.Itoa(cfg.conns),
		"-interval", cfg.interval.String(), "-duration", cfg.duration.String(), "-grace", cfg.grace.String(), "-warmup", cfg.warmup.String(),
		"-deltas=" + strconv.FormatBool(cfg.deltas),
	}
	if cfg.pollLog != "" {
		args = append(args, "-poll-log", cfg.pollLog)
	}
	if cfg.cpuProfile != "" {
		args = append(args, "-cpuprofile", cfg.cpuProfile+".pollers")
	}
	if t.token != "" {
		args = append(args, "-publish-every", cfg.publishEvery.String(), "-publish-base", t.base)
	}
	budget := cfg.warmup + cfg.duration + cfg.grace + childStartBudget
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	cmd := exec.CommandContext(cctx, exe, args...)
	cmd.Env = append(os.Environ(), envPollKey+"="+t.key, envPublishToken+"="+t.token)
	var out bytes.Buffer
	cmd.Stdout = &limitedBuffer{buf: &out, max: 1 << 20}
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("the pollers' process did not report within %s: %w", budget, err)
		}
		return stats{}, publishOutcome{}, 0, fmt.Errorf("the pollers' process: %w", err)
	}
	var r childReport
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r); err != nil {
		return stats{}, publishOutcome{}, 0, fmt.Errorf("reading the pollers' process's report %q: %w", out.String(), err)
	}
	return r.stats(), r.published(), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// limitedBuffer keeps at most max bytes: the child's report is one line.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.buf.Len()+len(p) > l.max {
		return 0, errors.New("the pollers' process wrote more than its report")
	}
	return l.buf.Write(p)
}

// pollOnly is the child's side: it polls cfg.pollTarget (and publishes)
// from now for the run's duration and prints its report.
func pollOnly(ctx context.Context, cfg config, stdout io.Writer) error {
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	clk := clock.New()
	l := load{
		url: cfg.pollTarget, key: cfg.pollKey, pollers: cfg.pollers, interval: cfg.interval, warmup: cfg.warmup,
		duration: cfg.duration, grace: cfg.grace, connsPerPoller: cfg.conns, clk: clk, etag: cfg.pollETag, deltas: cfg.deltas,
	}
	start := clk.Now()
	measured := start.Add(cfg.warmup)
	pub := publisher{base: cfg.publishBase, token: cfg.publishToken, modules: cfg.modules, clk: clk, run: time.Now().Unix()}
	if cfg.publishToken != "" {
		pub.interval = cfg.publishEvery
	}
	published := publishing(ctx, pub, measured, measured.Add(cfg.duration))
	samples := l.run(ctx, start)
	p := published()
	if err := ctx.Err(); err != nil {
		return err
	}
	if cfg.pollLog != "" {
		if err := writePollLog(cfg.pollLog, measured, samples, p); err != nil {
			return err
		}
	}
	st := summarize(samples)
	r := childReport{
		Requests: st.requests, Errors: st.errors, Unfinished: st.unfinished,
		P50: st.p50, P90: st.p90, P99: st.p99, P999: st.p999, Max: st.max,
		Changed: st.changed, Gone: st.gone, ChangedBytes: st.changedBytes, Bytes: st.bytes,
		Published: p.published, Failed: p.failed, LastError: p.lastError, Slowest: p.slowest, Took: p.took,
		AnswerP50: st.answerP50, AnswerP99: st.answerP99, AnswerP999: st.answerP999, BeforeP99: st.beforeP99,
	}
	if w := st.warm; w != nil {
		r.Warm = &childWarm{Requests: w.requests, Errors: w.errors, Unfinished: w.unfinished, P50: w.p50, P90: w.p90, P99: w.p99, P999: w.p999, Max: w.max}
	}
	return json.NewEncoder(stdout).Encode(r)
}
