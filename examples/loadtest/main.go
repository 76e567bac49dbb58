// Command loadtest measures the registry's index under polling load, served
// from the maintained snapshot and, side by side, from a scan of the module
// records per request.
//
//	go run ./examples/loadtest -modules 1000 -pollers 64 -duration 10s -latency 2ms
//
// It lands -modules one-file modules on the local disk (fast), then runs
// two in-process registries over that directory wrapped with
// newSlowVolume (one simulated round trip of -latency per file
// operation, as on a network share), one after the other:
//
//   - served: the index reads the ServedActivation snapshot (derived once
//     before the run, as at steady state);
//   - scan: the benchmark baseline, which scans the module records
//     (ModuleLanding.Activation) before every index request is answered
//     (scanEveryRequest, in front of the same server).
//
// Each of -pollers consumers polls the index every -interval with the same
// instance key, open loop: polls are scheduled by the clock, a late one is
// not skipped, and latency is measured from the scheduled instant. Polls
// still running when the run ends get -grace to finish; after that they are
// cut off and count as errors with their elapsed time, never dropped.
//
// With -publish-every D the served mode also publishes through the
// registry's own publish route every D while the pollers run, and the
// pollers ask for the delta since the document they hold (-deltas, default
// true; false: If-None-Match and the whole document after each change).
//
// With -separate-pollers the pollers and the publisher run in a child
// process (this program again, with -poll-target), so that the registry's
// process, its -cpuprofile and its collector's figures are the registry's
// alone.
//
// It prints a table (mode, requests, p50, p90, p99, p999, max, errors,
// derivations) and, last,
//
//	summary: served_p50_ms=X served_p99_ms=X served_p999_ms=X scan_p50_ms=X scan_p99_ms=X derivations=N requests=N publications=N bytes_per_poll_after_change=B index_bytes=B egress_mb_per_s=X
//
// where derivations and requests are the served mode's: how many scans of the
// module records served how many polls; bytes_per_poll_after_change is the
// mean body of the polls answered 200 (a delta, or the document), and
// egress_mb_per_s every poll's body bytes over the run's duration.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/internal/gcsetting"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/landing"
)

// shutdownBudget bounds stopping one replica.
const shutdownBudget = 15 * time.Second

// setupBudget bounds landing the modules and starting a replica.
const setupBudget = 30 * time.Minute

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

type config struct {
	modules, pollers, conns int
	duration, latency       time.Duration
	interval, grace, warmup time.Duration
	cpuProfile, memProfile  string
	traceFile, pollLog      string
	readPool                int
	baseline, feed, journal bool
	freshness               time.Duration
	derivationBudget        time.Duration
	absorb                  int    // landings whose cross-replica absorption is timed (two replicas)
	pg                      string // PostgreSQL URL the two replicas share in -absorb
	dir                     string // where the modules are landed; kept (and reused) when set
	publishEvery            time.Duration
	deltas                  bool
	volumes                 string            // the served mode's volumes, in order
	s3Server                bool              // serve the test S3 server only, for another process's -volumes s3://…
	separate                bool              // the pollers and the publisher run in a child process
	gc                      gcsetting.Setting // the collector of the registry's process (not the pollers' child)

	// The child's side of -separate-pollers: poll this index URL only.
	pollTarget, pollKey, pollETag string
	publishBase, publishToken     string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.IntVar(&c.modules, "modules", 1000, "modules landed on the volume")
	fs.IntVar(&c.pollers, "pollers", 64, "consumers polling the index")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long each mode is polled")
	fs.DurationVar(&c.latency, "latency", 2*time.Millisecond, "simulated round trip per volume operation")
	fs.DurationVar(&c.interval, "interval", 100*time.Millisecond, "each poller's polling interval")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "the pollers poll this long before the measured -duration, joining one after another over it (publishing starts with the measured run); the warm-up's polls are reported apart, on a line of their own")
	fs.DurationVar(&c.grace, "grace", 2*time.Second, "how long polls running at the end may take before they are cut off")
	fs.IntVar(&c.conns, "conns", 4, "connections per poller (a poll waiting for one counts the wait)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the served mode's run to this file (with -separate-pollers, the pollers' process's to this file.pollers)")
	fs.StringVar(&c.memProfile, "memprofile", "", "write an allocation profile (allocations since start) after the served mode's run to this file")
	fs.StringVar(&c.traceFile, "trace", "", "write a runtime/trace of the registry's process during the served mode's run to this file (go tool trace)")
	fs.StringVar(&c.pollLog, "poll-log", "", "write every poll of the served mode (scheduled instant, latency, status, bytes) and every publication (sent, took) to this file, in ms since the measured run's start (the warm-up's polls are negative)")
	fs.IntVar(&c.readPool, "readpool", landing.DefaultReadPool, "the landing's read pool: a derivation reads modules on up to readpool-1 slots at once")
	fs.BoolVar(&c.baseline, "baseline", true, "also run the scan-per-request baseline (it cannot finish at 100,000 modules)")
	fs.BoolVar(&c.feed, "feed", true, "announce and absorb writes through the mesh's change feed")
	fs.DurationVar(&c.derivationBudget, "derivation-budget", registry.DefaultDerivationBudget, "bound of one derivation (a loaded machine may need more for the first at 100,000 modules)")
	fs.BoolVar(&c.journal, "journal", true, "tail the volume's journal (false, with -feed=false: re-derivation within -freshness alone)")
	fs.DurationVar(&c.freshness, "freshness", registry.DefaultFreshness, "the served snapshot's freshness bound")
	fs.IntVar(&c.absorb, "absorb", 0, "instead of the polling run: start two replicas on one volume (and one -pg database), land this many modules on A and time each until it is in B's index")
	fs.StringVar(&c.dir, "dir", "", "land the modules here and keep them; a directory a previous run landed -modules into is reused (the landing takes minutes at 100,000)")
	fs.DurationVar(&c.publishEvery, "publish-every", 0, "while the pollers run, publish a new version (every fifth time a new module) through the registry's publish route this often (0: never)")
	fs.BoolVar(&c.deltas, "deltas", true, "pollers ask for the delta since the document they hold (false: If-None-Match, and the whole document after every change)")
	fs.StringVar(&c.volumes, "volumes", "dir", "the volumes the served mode runs on, one after the other: dir (the directory behind -latency), s3 (a copy of it on an S3-protocol server started in process), or an s3://bucket/prefix?endpoint=…&region=… URL")
	fs.BoolVar(&c.s3Server, "s3-server", false, "only serve the S3-protocol test server (-volumes s3 starts it in process) until interrupted, printing the -volumes URL and environment another loadtest process reaches it with")
	fs.StringVar(&c.pg, "pg", "", "PostgreSQL URL the two -absorb replicas share (empty: one in-process memstore, shared)")
	fs.BoolVar(&c.separate, "separate-pollers", false, "run the pollers and the publisher in a child process (this program again), so that the registry's process, its CPU profile and its collector's figures are the registry's alone")
	fs.StringVar(&c.pollTarget, "poll-target", "", "(the child of -separate-pollers) only poll this index URL and print the outcome as JSON")
	fs.StringVar(&c.pollETag, "poll-etag", "", "(with -poll-target) the ETag the pollers hold at the start")
	fs.StringVar(&c.publishBase, "publish-base", "", "(with -poll-target) the registry's URL to publish to every -publish-every")
	c.gc.Register(fs)
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if err := c.gc.Validate(); err != nil {
		return config{}, err
	}
	// The child's secrets come through its environment, not its command
	// line, which any local user can read (ps, /proc/*/cmdline).
	c.pollKey, c.publishToken = os.Getenv(envPollKey), os.Getenv(envPublishToken)
	switch {
	case fs.NArg() > 0:
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.modules < 1, c.pollers < 1, c.conns < 1, c.readPool < 1:
		return config{}, errors.New("-modules, -pollers, -conns and -readpool must be at least 1")
	case c.publishEvery < 0:
		return config{}, errors.New("-publish-every must not be negative")
	case c.absorb < 0, c.freshness <= 0:
		return config{}, errors.New("-absorb must not be negative and -freshness must be positive")
	case c.duration <= 0, c.interval <= 0, c.latency < 0, c.grace < 0, c.warmup < 0:
		return config{}, errors.New("-duration and -interval must be positive; -latency, -grace and -warmup must not be negative")
	case c.duration > math.MaxInt64-c.warmup-c.grace: // the run's end would wrap into the past
		return config{}, fmt.Errorf("-duration %s with -warmup %s and -grace %s is longer than a run can be (%s)", c.duration, c.warmup, c.grace, time.Duration(math.MaxInt64))
	case c.pg != "" && c.absorb == 0:
		return config{}, errors.New("-pg is the database of the -absorb replicas: give -absorb N too")
	}
	if c.pg != "" {
		if _, err := pgx.ParseConfig(c.pg); err != nil {
			return config{}, fmt.Errorf("-pg: %w", err)
		}
	}
	// Checked before the landing, which takes minutes at 100,000 modules,
	// and the run, whose figures a file failing after it would lose.
	for _, out := range []struct{ flag, path string }{
		{"-cpuprofile", c.cpuProfile}, {"-memprofile", c.memProfile}, {"-trace", c.traceFile}, {"-poll-log", c.pollLog},
	} {
		if out.path == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Dir(out.path)); err != nil || !fi.IsDir() {
			return config{}, fmt.Errorf("%s %s: its directory does not exist", out.flag, out.path)
		}
	}
	for name := range strings.SplitSeq(c.volumes, ",") {
		if name != "dir" && name != "s3" && !strings.HasPrefix(name, "s3://") {
			return config{}, fmt.Errorf("-volumes: %q is not dir, s3 or an s3:// URL", name)
		}
	}
	return c, nil
}

// result is one mode's outcome.
type result struct {
	mode        string
	volume      string
	stats       stats
	derivations int64
	// derivationsRun is how many derivations ran while the pollers did,
	// over runFor: the steady state, without the first or any before it.
	derivationsRun int64
	runFor         time.Duration

	readyIn       time.Duration
	snapshotBytes int64 // heap the first snapshot holds
	catalogBytes  int64 // heap the server's catalog and first index document hold
	indexBytes    int   // the index document a consumer downloads
	indexFirst    time.Duration
	index304      time.Duration
	etag          string // the document's ETag, which the pollers hold at the start
	published     publishOutcome
	gc            gcDuring // what the collector did while the pollers ran (the whole process)
	// CPU time used while the pollers ran: by this process, and by the
	// pollers' child process (-separate-pollers).
	cpuSelf, cpuChild time.Duration
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if cfg.s3Server {
		return serveS3(ctx, stdout)
	}
	if cfg.pollTarget != "" {
		return pollOnly(ctx, cfg, stdout)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	defer cfg.gc.Apply()() // the registry's process; the pollers' child keeps the environment's
	dir := cfg.dir
	reuse := false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "meshrx-loadtest-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		marker, err := os.ReadFile(filepath.Join(dir, "loadtest-modules"))
		reuse = err == nil && strings.TrimSpace(string(marker)) == strconv.Itoa(cfg.modules)
	}

	setupCtx, cancel := context.WithTimeout(ctx, setupBudget)
	defer cancel()
	began := time.Now()
	if !reuse {
		if err := landModules(setupCtx, dir, cfg.modules, logger); err != nil {
			return err
		}
		if cfg.dir != "" {
			if err := os.WriteFile(filepath.Join(dir, "loadtest-modules"), []byte(strconv.Itoa(cfg.modules)), 0o644); err != nil {
				return err
			}
		}
		fmt.Fprintf(stderr, "landed %d modules on the local disk in %s\n", cfg.modules, time.Since(began).Round(time.Millisecond))
	}
	if cfg.absorb > 0 {
		return runAbsorb(ctx, setupCtx, cfg, dir, logger, stdout, stderr)
	}

	began = time.Now()
	targets, err := openTargets(setupCtx, cfg.volumes, dir, cfg.modules)
	if err != nil {
		return err
	}
	defer func() {
		for _, t := range targets {
			t.stop()
		}
	}()
	if len(targets) > 1 || targets[0].v != nil {
		fmt.Fprintf(stderr, "volumes %s ready in %s\n", cfg.volumes, time.Since(began).Round(time.Millisecond))
	}
	// The served mode on each volume, then the baseline on the first.
	type step struct {
		mode string
		t    target
	}
	var steps []step
	for _, t := range targets {
		steps = append(steps, step{"served", t})
	}
	if cfg.baseline {
		steps = append(steps, step{"scan", targets[0]})
	}
	var results []result
	for _, st := range steps {
		r, err := runMode(ctx, setupCtx, cfg, dir, st.mode, st.t, logger, stderr)
		if err != nil {
			return fmt.Errorf("%s on %s: %w", st.mode, st.t.name, err)
		}
		if len(targets) > 1 {
			r.mode += "/" + st.t.name
		}
		r.volume = st.t.name
		results = append(results, r)
	}

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\trequests\tp50\tp90\tp99\tp999\tmax\terrors\tderivations")
	for _, r := range results {
		s := r.stats
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", r.mode, s.requests, ms(s.p50), ms(s.p90), ms(s.p99), ms(s.p999), ms(s.max), s.errors, r.derivations)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range results {
		if r.stats.unfinished > 0 {
			fmt.Fprintf(stdout, "%s: %d of the errors were polls still running %s after the run; they count with their elapsed time\n",
				r.mode, r.stats.unfinished, cfg.grace)
		}
	}
	served := results[0]
	var scan result
	for _, r := range results {
		if strings.HasPrefix(r.mode, "scan") {
			scan = r
			continue
		}
		fmt.Fprintf(stdout, "volume: %s ready_s=%.2f served_p50_ms=%.3f served_p99_ms=%.3f derivations=%d publications=%d publish_failed=%d publish_p50_ms=%.1f publish_max_ms=%.1f\n",
			r.volume, r.readyIn.Seconds(), msf(r.stats.p50), msf(r.stats.p99), r.derivations, r.published.published, r.published.failed,
			msf(r.published.median()), msf(r.published.slowest))
	}
	fmt.Fprintf(stdout, "served: ready_s=%.1f derivations_per_30s=%.2f snapshot_bytes_per_module=%d catalog_bytes_per_module=%d index_bytes=%d index_first_ms=%.1f index_304_ms=%.3f\n",
		served.readyIn.Seconds(), float64(served.derivationsRun)/(served.runFor.Seconds()/30),
		served.snapshotBytes/int64(cfg.modules), served.catalogBytes/int64(cfg.modules), served.indexBytes, msf(served.indexFirst), msf(served.index304))
	{
		st, run := served.stats, cfg.warmup+cfg.duration+cfg.grace
		fmt.Fprintf(stdout, "served: from each request's write to its answer read (the registry's answer, the network and the reading): p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f; from the scheduled instant to the write (in the pollers' process: a goroutine to run, a connection): p99_ms=%.3f\n",
			msf(st.answerP50), msf(st.answerP99), msf(st.answerP999), msf(st.beforeP99))
		if cfg.separate {
			fmt.Fprintf(stdout, "served: cpu_s registry_process=%.2f pollers_process=%.2f over the warm-up and the run (%s at most)\n", served.cpuSelf.Seconds(), served.cpuChild.Seconds(), run)
		} else {
			fmt.Fprintf(stdout, "served: cpu_s process=%.2f (registry and pollers) over the warm-up and the run (%s at most)\n", served.cpuSelf.Seconds(), run)
		}
	}
	if w := served.stats.warm; w != nil {
		fmt.Fprintf(stdout, "served: warm-up of %s before the run (not in the figures above): requests=%d p50_ms=%.3f p99_ms=%.3f max_ms=%.3f errors=%d\n",
			cfg.warmup, w.requests, msf(w.p50), msf(w.p99), msf(w.max), w.errors)
	}
	whose := "the whole process, pollers included"
	if cfg.separate {
		whose = "the registry's process; the pollers ran in a child process"
	}
	fmt.Fprintf(stdout, "served: gc_cycles=%d gc_pause_max_ms=%.3f alloc_mb_per_s=%.1f heap_live_mb=%.1f gc_cpu_s=%.2f gc_assist_cpu_s=%.2f gc_mark_busy_cpu_s=%.2f gc_mark_idle_cpu_s=%.2f heap_scan_mb=%.1f (%s)\n",
		served.gc.cycles, msf(served.gc.maxPause), served.gc.allocMB/served.gc.span.Seconds(), served.gc.liveMB, served.gc.cpu, served.gc.assistCPU,
		served.gc.busyMark, served.gc.idleMark, served.gc.scanMB, whose)
	if cfg.publishEvery > 0 {
		p := served.published
		fmt.Fprintf(stdout, "served: publications failed=%d slowest_ms=%.1f; %d polls found a change, %d deltas answered 410\n",
			p.failed, msf(p.slowest), served.stats.changed, served.stats.gone)
		if p.lastError != "" {
			fmt.Fprintf(stdout, "served: last publication error: %s\n", p.lastError)
		}
	}
	fmt.Fprintf(stdout, "summary: served_p50_ms=%.3f served_p99_ms=%.3f served_p999_ms=%.3f scan_p50_ms=%.3f scan_p99_ms=%.3f derivations=%d requests=%d publications=%d bytes_per_poll_after_change=%d index_bytes=%d egress_mb_per_s=%.3f\n",
		msf(served.stats.p50), msf(served.stats.p99), msf(served.stats.p999), msf(scan.stats.p50), msf(scan.stats.p99), served.derivations, served.stats.requests,
		served.published.published, served.stats.bytesPerChange(), served.indexBytes, float64(served.stats.bytes)/cfg.duration.Seconds()/1e6)
	return nil
}

// runMode starts a replica in mode, polls it and stops it.
func runMode(ctx, setupCtx context.Context, cfg config, dir, mode string, t target, logger *slog.Logger, stderr io.Writer) (_ result, err error) {
	began := time.Now()
	before := heapInUse()
	publish := cfg.publishEvery > 0 && mode == "served"
	token := ""
	if publish {
		token = rand.Text()
	}
	rep, err := startReplica(setupCtx, replicaOptions{
		dir: dir, volume: t.v, modules: cfg.modules, latency: cfg.latency, scan: mode == "scan", readPool: cfg.readPool,
		register: true, feed: cfg.feed, journal: cfg.journal, freshness: cfg.freshness, derivationBudget: cfg.derivationBudget, name: mode, token: token,
	}, logger)
	if err != nil {
		return result{}, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
		defer cancel()
		err = errors.Join(err, rep.close(sctx))
	}()
	perOp := cfg.latency.String() + " per volume operation"
	if t.v != nil {
		perOp = "an S3 request per volume operation"
	}
	fmt.Fprintf(stderr, "%s on %s: replica ready in %s (first derivation %s); %d pollers every %s for %s, %s\n",
		mode, t.name, time.Since(began).Round(time.Millisecond), rep.readyIn.Round(time.Millisecond), cfg.pollers, cfg.interval, cfg.duration, perOp)
	res := result{mode: mode, readyIn: rep.readyIn, snapshotBytes: rep.snapshotBytes}
	// Both modes' pollers start holding the document, as consumers at
	// steady state do.
	size, etag, first, revalidate, err := measureIndex(ctx, rep.url, rep.key)
	if err != nil {
		return result{}, err
	}
	if mode == "served" {
		// The package nodes are the mesh's, not the registry's: count what
		// the server holds beyond them and the snapshot (its catalog, the
		// first index document).
		res.indexBytes, res.indexFirst, res.index304 = size, first, revalidate
		res.catalogBytes = heapInUse() - rep.heapAtServer
		fmt.Fprintf(stderr, "served: heap %d MB before the replica; index %d bytes, first %s, 304 %s\n",
			before>>20, size, first.Round(time.Microsecond), revalidate.Round(time.Microsecond))
	}

	if cfg.cpuProfile != "" && mode == "served" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return result{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return result{}, err
		}
		defer pprof.StopCPUProfile()
	}
	if cfg.traceFile != "" && mode == "served" {
		f, err := os.Create(cfg.traceFile)
		if err != nil {
			return result{}, err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return result{}, err
		}
		defer trace.Stop()
	}
	res.etag = etag
	gcBefore, cpuBefore := readGC(), processCPU()
	derivedBefore, runStart := rep.derivations(), time.Now()
	if cfg.separate {
		t := childTarget{url: rep.url, key: rep.key, etag: res.etag}
		if publish {
			t.base, t.token = rep.base, token
		}
		if res.stats, res.published, res.cpuChild, err = runChild(ctx, cfg, t, stderr); err != nil {
			return result{}, err
		}
	} else {
		clk := clock.New()
		l := load{
			url: rep.url, key: rep.key, pollers: cfg.pollers, interval: cfg.interval, warmup: cfg.warmup,
			duration: cfg.duration, grace: cfg.grace, connsPerPoller: cfg.conns, clk: clk, etag: res.etag, deltas: cfg.deltas,
		}
		start := clk.Now()
		measured := start.Add(cfg.warmup)
		pub := publisher{base: rep.base, token: token, modules: cfg.modules, clk: clk, run: time.Now().Unix()}
		if publish {
			pub.interval = cfg.publishEvery
		}
		published := publishing(ctx, pub, measured, measured.Add(cfg.duration))
		samples := l.run(ctx, start)
		res.published = published()
		res.stats = summarize(samples)
		if cfg.pollLog != "" {
			if err := writePollLog(cfg.pollLog, measured, samples, res.published); err != nil {
				return result{}, err
			}
		}
	}
	res.gc, res.cpuSelf = gcBetween(gcBefore, readGC()), processCPU()-cpuBefore
	res.derivationsRun, res.runFor = rep.derivations()-derivedBefore, time.Since(runStart)
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	if cfg.memProfile != "" && mode == "served" {
		if err := writeHeapProfile(cfg.memProfile); err != nil {
			return result{}, err
		}
	}
	res.derivations = rep.derivations()
	return res, nil
}

func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	return errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", msf(d)) }
