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
// It prints a table (mode, requests, p50, p90, p99, max, errors,
// derivations) and, last,
//
//	summary: served_p50_ms=X served_p99_ms=X scan_p50_ms=X scan_p99_ms=X derivations=N requests=N
//
// where derivations and requests are the served mode's: how many scans of the
// module records served how many polls.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/benbjohnson/clock"
)

// shutdownBudget bounds stopping one replica.
const shutdownBudget = 15 * time.Second

// setupBudget bounds landing the modules and starting a replica.
const setupBudget = 5 * time.Minute

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
	interval, grace         time.Duration
	cpuProfile              string
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
	fs.DurationVar(&c.grace, "grace", 2*time.Second, "how long polls running at the end may take before they are cut off")
	fs.IntVar(&c.conns, "conns", 4, "connections per poller (a poll waiting for one counts the wait)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the served mode's run to this file")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	switch {
	case fs.NArg() > 0:
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.modules < 1, c.pollers < 1, c.conns < 1:
		return config{}, errors.New("-modules, -pollers and -conns must be at least 1")
	case c.duration <= 0, c.interval <= 0, c.latency < 0, c.grace < 0:
		return config{}, errors.New("-duration and -interval must be positive; -latency and -grace must not be negative")
	}
	return c, nil
}

// result is one mode's outcome.
type result struct {
	mode        string
	stats       stats
	derivations int64
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dir, err := os.MkdirTemp("", "meshrx-loadtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	setupCtx, cancel := context.WithTimeout(ctx, setupBudget)
	defer cancel()
	began := time.Now()
	if err := landModules(setupCtx, dir, cfg.modules, logger); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "landed %d modules on the local disk in %s\n", cfg.modules, time.Since(began).Round(time.Millisecond))

	var results []result
	for _, mode := range []string{"served", "scan"} {
		r, err := runMode(ctx, setupCtx, cfg, dir, mode, logger, stderr)
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		results = append(results, r)
	}

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\trequests\tp50\tp90\tp99\tmax\terrors\tderivations")
	for _, r := range results {
		s := r.stats
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\n", r.mode, s.requests, ms(s.p50), ms(s.p90), ms(s.p99), ms(s.max), s.errors, r.derivations)
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
	served, scan := results[0], results[1]
	fmt.Fprintf(stdout, "summary: served_p50_ms=%.3f served_p99_ms=%.3f scan_p50_ms=%.3f scan_p99_ms=%.3f derivations=%d requests=%d\n",
		msf(served.stats.p50), msf(served.stats.p99), msf(scan.stats.p50), msf(scan.stats.p99), served.derivations, served.stats.requests)
	return nil
}

// runMode starts a replica in mode, polls it and stops it.
func runMode(ctx, setupCtx context.Context, cfg config, dir, mode string, logger *slog.Logger, stderr io.Writer) (_ result, err error) {
	began := time.Now()
	rep, err := startReplica(setupCtx, dir, cfg.modules, cfg.latency, mode == "scan", logger)
	if err != nil {
		return result{}, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
		defer cancel()
		err = errors.Join(err, rep.close(sctx))
	}()
	fmt.Fprintf(stderr, "%s: replica ready in %s; %d pollers every %s for %s, %s per volume operation\n",
		mode, time.Since(began).Round(time.Millisecond), cfg.pollers, cfg.interval, cfg.duration, cfg.latency)

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
	clk := clock.New()
	l := load{
		url: rep.url, key: rep.key, pollers: cfg.pollers, interval: cfg.interval,
		duration: cfg.duration, grace: cfg.grace, connsPerPoller: cfg.conns, clk: clk,
	}
	samples := l.run(ctx, clk.Now())
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	return result{mode: mode, stats: summarize(samples), derivations: rep.derivations()}, nil
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", msf(d)) }
