// Command bell serves a live notification bell: a small page whose bell is
// fed by Server-Sent Events from notifications.Service.Bell, and a form that
// sends a notification to a user.
//
//	go run ./examples/bell                  # embedded store, http://127.0.0.1:8081
//	go run ./examples/bell -addr :0         # any free port; the URL is printed
//	go run ./examples/bell -pg postgres://… # on PostgreSQL
//
// It prints a sign-in link per demo user (alice, bob, and ops, a global admin
// who also sees the Admin notifications); open one, then send a notification
// from the form: it appears in the addressee's bell without a reload. The
// tokens are new at every start; programs send one as Authorization: Bearer.
// See docs/security.md for what the bell enforces.
//
// Load runs (examples/bellload) opt into more by name; none is needed to
// use the demo, and each gives something away:
//
//	-users N                  issue tokens to N generated users user00001…
//	-admins M                 and to M generated global admins admin00001…
//	-tokens FILE              write every user's token to FILE (mode 0600);
//	                          only the demo users' links are printed
//	-max-streams N            raise the cap on event streams (default 256)
//	-max-streams-per-viewer N raise the per-viewer cap (default 8)
//	-max-conns N              raise the cap on connections (default 512;
//	                          more than -max-streams: each stream holds one)
//	-pprof ADDR               serve net/http/pprof on ADDR, a loopback
//	                          address, to profile a load run
//
// -write-each writes every event with its own system call; by default a
// broadcast's events are written in io_uring batches where the kernel
// allows it (Linux), and one by one elsewhere.
//
// With -measure (and -pg) it instead fills the database with partitions and
// notifications and compares opening the pinned bell with the old
// unanchored read; see measure.go.
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
	"syscall"
)

// config is what the flags say.
type config struct {
	addr      string
	pg        string
	writeEach bool // -write-each
	measure   measureConfig
	load      loadConfig
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("bell", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8081", "listen address; :0 picks a free port")
	fs.StringVar(&c.pg, "pg", "", "PostgreSQL URL; empty runs on the embedded store")
	fs.BoolVar(&c.writeEach, "write-each", false, "write each event with its own system call, not in io_uring batches (which are used on Linux where io_uring is available)")
	fs.BoolVar(&c.measure.enabled, "measure", false, "measure the pinned bell against the old unanchored read (needs -pg) instead of serving")
	fs.IntVar(&c.measure.partitions, "partitions", 188, "with -measure: partitions (users) to create")
	fs.IntVar(&c.measure.notifications, "notifications", 10000, "with -measure: notifications to spread over them")
	fs.IntVar(&c.measure.samples, "samples", 200, "with -measure: bell opens to time for each shape")
	def := defaultLimits()
	fs.IntVar(&c.load.users, "users", 0, "for load runs: also issue tokens to N generated users user00001… (each may sign in)")
	fs.IntVar(&c.load.admins, "admins", 0, "for load runs: also issue tokens to M generated global admins admin00001… (each sees the Admin notifications)")
	fs.StringVar(&c.load.tokensFile, "tokens", "", "for load runs: write every user's token to this file (mode 0600) and print sign-in links for the demo users only")
	fs.IntVar(&c.load.streams, "max-streams", def.streams, "RAISES A SAFETY CAP: event streams open at once, in all")
	fs.IntVar(&c.load.streamsPerViewer, "max-streams-per-viewer", def.streamsPerViewer, "RAISES A SAFETY CAP: event streams one viewer may hold open")
	fs.IntVar(&c.load.conns, "max-conns", def.conns, "RAISES A SAFETY CAP: connections open at once")
	fs.StringVar(&c.load.pprof, "pprof", "", "for load runs: serve net/http/pprof on this loopback address (:0 picks a port; printed)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := c.load.validate(); err != nil {
		return c, err
	}
	return c, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bell:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if cfg.measure.enabled {
		err = measure(ctx, cfg, os.Stdout, logger)
	} else {
		err = run(ctx, cfg, os.Stdout, logger)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bell:", err)
		os.Exit(1)
	}
}
