// Command pglive measures pgstore's live queries across processes, the
// shape of issue 25's PostgreSQL run: two replicas (two processes, each a
// pgstore.Store holding -live live queries of the bell's shape: one viewer's
// namespace, node type Notification), one write every -interval from a
// third process, against one PostgreSQL. Each write is one new notification
// to a random viewer, carrying its sequence number and the time its Put
// started; each replica times the frame that delivers it and counts its own
// CPU (getrusage) per change notice.
//
//	go run ./examples/pglive [-live 10000] [-writes 10000] [-interval 1ms] [-pg URL]
//
// Without -pg it starts a throwaway PostgreSQL the way the tests do
// (mesh/pgstore/pgtest) and removes it afterwards. The replicas and the
// writer are this program again (re-executed with a role in the
// environment). Every wait has a budget and says what it waited for. The
// last line is
//
//	summary: replicas=2 live_queries=N writes=N notice_to_frame_p50_ms=X notice_to_frame_p99_ms=X notice_dispatch_p50_ms=X notice_dispatch_p99_ms=X put_p50_ms=X put_p99_ms=X write_to_frame_p50_ms=X write_to_frame_p99_ms=X put_return_to_frame_p50_ms=X put_return_to_frame_p99_ms=X replica_cpu_us_per_notice=X lost=N duplicates=N misrouted=N write_errors=N observer_errors=N
//
// over both replicas (each replica's own figures are printed above it).
// notice_to_frame is from the change notice's arrival at a replica's
// listener to the frame reaching the live query's observer, and
// notice_dispatch the listener's part of it; put is the writer's Put,
// start to return (its commit is inside it); write_to_frame is from the
// start of the Put to the frame; put_return_to_frame from the Put's
// return (the commit acknowledged to the writer) to the frame, negative
// when the frame came first. replica_cpu_us_per_notice is the replicas'
// process CPU (user + system) during the writes divided by the change
// notices their listeners received: the listener, dispatch, the woken
// queries' reads and the frames, everything the notices cost a replica.
// docs/live-queries.md says more of each span.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if role := os.Getenv(roleEnv); role != "" {
		if err := runRole(role, os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "pglive:", err)
			os.Exit(1)
		}
		return
	}
	// Cancelling on a signal lets run stop its children and remove its
	// throwaway server; dying at it would leave the server's directory.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "pglive:", err)
		os.Exit(1)
	}
}

// config is the run's flags.
type config struct {
	pg         string
	live       int
	writes     int
	interval   time.Duration
	partitions int
	writers    int
	budget     time.Duration
	cpuProfile string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("pglive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.pg, "pg", "", "PostgreSQL URL of a database to use (default: a throwaway server started here)")
	fs.IntVar(&c.live, "live", 10_000, "live queries per replica (one per viewer)")
	fs.IntVar(&c.writes, "writes", 10_000, "writes, one notification each to a random viewer")
	fs.DurationVar(&c.interval, "interval", time.Millisecond, "time between writes")
	fs.IntVar(&c.partitions, "partitions", 10, "partitions the viewers are spread over")
	fs.IntVar(&c.writers, "writers", 8, "the writer's concurrent Puts at most (a Put may take longer than -interval)")
	fs.DurationVar(&c.budget, "budget", 10*time.Minute, "bound on the whole run")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write each replica's CPU profile of the writes to this path plus .replicaN")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	switch {
	case fs.NArg() > 0:
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.live < 1 || c.writes < 1 || c.partitions < 1 || c.writers < 1:
		return config{}, errors.New("-live, -writes, -partitions and -writers must be at least 1")
	case c.interval <= 0 || c.budget <= 0:
		return config{}, errors.New("-interval and -budget must be positive")
	case c.interval > c.budget/time.Duration(c.writes): // divided: the product may wrap
		return config{}, fmt.Errorf("-writes %d, one every -interval %s, take longer than the run's -budget %s", c.writes, c.interval, c.budget)
	}
	return c, nil
}
