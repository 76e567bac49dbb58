// Command fanout measures, side by side in one run, what a pinned read and a
// fan-out over every partition schema cost PostgreSQL: latency, the relation
// locks the reading transaction holds, what they do to a concurrent writer,
// and how many live-query re-reads unrelated writes cause with and without
// the node type on the change feed.
//
//	go run ./examples/fanout                        # throwaway server, removed at exit
//	go run ./examples/fanout -pg postgres://… -partitions 188 -rows 50
//
// Without -pg it starts a throwaway PostgreSQL server with pgtest (as the
// tests do), works in a fresh database there, and stops and removes the
// server at exit. With -pg it works in the database the URL names: the
// partitions (p000, p001, …) are created or reused and stay; every run
// writes nodes of its own, so a rerun's writes are inserts too.
//
// It fills -partitions partitions with -rows nodes of type Item each (and a
// few nodes of other types), then measures:
//
//	a. a pinned read (namespace:pNNN nodeType:Item) against the same read as
//	   a fan-out (nodeType:Item partitions:all), each read the Initial frame
//	   of Store.Query, interleaved, -iterations of each;
//	b. the relation locks each holds (pgstore.Store.LocksHeld);
//	c. a writer's insert (Store.Put of a new node), -iterations of them:
//	   alone, beside -readers readers looping pinned reads, and beside as
//	   many looping fan-outs;
//	d. the re-reads (Stats().Requeries) that -writes writes of an unrelated
//	   type cause to -live open fan-out live queries: on a store whose feed
//	   classifies notices by node type, and for the same writes announced
//	   without their node type (pg_notify on pgstore.NotifyChannel);
//	e. with -scale 1000,100000,1000000: the pinned read of 50 Items in a
//	   partition grown to each size (bulk INSERT, keys backfilled by
//	   pgstore.BackfillKeys), through Store.Query and as the hand-written
//	   indexed SQL on a pool of its own, interleaved, -iterations of each.
//
// Reads that fail beside the writer (c) are counted per condition, with
// the first error (a fan-out can run the server out of lock memory: "out
// of shared memory"), and summed in the summary line.
//
// It prints a table, one row per measurement, and last a line
//
//	summary: pinned_locks=N fanout_locks=N pinned_p50_ms=X fanout_p50_ms=X writer_p99_alone_ms=X writer_p99_pinned_ms=X writer_p99_fanout_ms=X requeries_typed=N requeries_untyped=N reads_failed_pinned=N reads_failed_fanout=N
//
// preceded, with -scale, by one line per size
//
//	scale: nodes=N store_p50_ms=X sql_p50_ms=X ratio=X
//
// Filling writes with -workers concurrent Puts. Each phase has a budget
// (-phase-budget); SIGINT or SIGTERM cancels the run, which then closes its
// stores and stops the throwaway server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	pg          string
	partitions  int
	rows        int
	iterations  int
	readers     int
	writes      int
	live        int
	workers     int
	phaseBudget time.Duration
	scale       []int // partition sizes of phase e; none skips it
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("fanout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.pg, "pg", "", "PostgreSQL URL of the database to use; empty starts a throwaway server")
	fs.IntVar(&c.partitions, "partitions", 188, "partition schemas to fill")
	fs.IntVar(&c.rows, "rows", 50, "Item nodes per partition")
	fs.IntVar(&c.iterations, "iterations", 100, "timed reads of each kind (a), and timed writer inserts per condition (c)")
	fs.IntVar(&c.readers, "readers", 8, "concurrent readers beside the writer (c)")
	fs.IntVar(&c.writes, "writes", 1000, "writes of an unrelated node type (d)")
	fs.IntVar(&c.live, "live", 20, "open fan-out live queries (d)")
	fs.IntVar(&c.workers, "workers", 8, "concurrent writers while filling the partitions")
	fs.DurationVar(&c.phaseBudget, "phase-budget", 10*time.Minute, "longest any one phase may take")
	scale := fs.String("scale", "", "comma-separated sizes (nodes) of partition \"scale\" for phase e, e.g. 1000,100000,1000000; empty skips it")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.scale, err = parseSizes(*scale); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.partitions < 1 || c.partitions > maxPartitions:
		return c, fmt.Errorf("-partitions must be between 1 and %d, not %d", maxPartitions, c.partitions)
	case c.rows < 1:
		return c, fmt.Errorf("-rows must be at least 1, not %d", c.rows)
	case c.iterations < 1:
		return c, fmt.Errorf("-iterations must be at least 1, not %d", c.iterations)
	case c.readers < 1 || c.readers > maxReaders:
		return c, fmt.Errorf("-readers must be between 1 and %d, not %d", maxReaders, c.readers)
	case c.writes < 1:
		return c, fmt.Errorf("-writes must be at least 1, not %d", c.writes)
	case c.live < 1:
		return c, fmt.Errorf("-live must be at least 1, not %d", c.live)
	case c.workers < 1:
		return c, fmt.Errorf("-workers must be at least 1, not %d", c.workers)
	case c.phaseBudget <= 0:
		return c, fmt.Errorf("-phase-budget must be positive, not %s", c.phaseBudget)
	}
	return c, nil
}

// maxReaders keeps the store's pool (the readers, the writer and room for
// the store's own re-reads) within its int32 size.
const maxReaders = math.MaxInt32 - 4

// run parses args, finds the database, measures and prints the report.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	quiet := newQuietFanOuts(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	logger := slog.New(quiet)

	dbURL := cfg.pg
	if dbURL == "" {
		fmt.Fprintln(stderr, "starting a throwaway PostgreSQL server (pgtest)…")
		srv, err := pgtest.Config{Logger: logger}.Start(ctx)
		if err != nil {
			return fmt.Errorf("starting a throwaway PostgreSQL server: %w", err)
		}
		defer func() {
			// Stop is bounded by pgtest's stop budget.
			if serr := srv.Stop(); serr != nil {
				err = errors.Join(err, fmt.Errorf("stopping the throwaway server: %w", serr))
			}
		}()
		if dbURL, err = srv.CreateDatabase(ctx, "fanout"); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "server: throwaway PostgreSQL in %s (stopped and removed at exit)\n", srv.Dir())
	} else {
		fmt.Fprintf(stdout, "server: %s (from -pg; the partitions stay)\n", redact(dbURL))
	}
	fmt.Fprintf(stdout, "machine: %d CPUs, load average %s at start\n", runtime.NumCPU(), loadAverage())
	fmt.Fprintf(stdout, "run: %d partitions × %d Item rows, %d iterations, %d readers, %d writes, %d live queries\n",
		cfg.partitions, cfg.rows, cfg.iterations, cfg.readers, cfg.writes, cfg.live)

	res, err := measure(ctx, dbURL, cfg, stderr, logger)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "machine: load average %s at end\n", loadAverage())
	fmt.Fprintf(stderr, "the router warned of %d fan-outs (not printed)\n", quiet.fanOutsLogged())
	return res.print(stdout)
}

// loadAverage returns the 1, 5 and 15 minute load averages, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// redact hides a password in a URL that is printed.
func redact(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil || u.Scheme == "" {
		return "(connection string)"
	}
	return u.Redacted()
}
