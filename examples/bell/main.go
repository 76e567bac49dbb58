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
	addr    string
	pg      string
	measure measureConfig
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("bell", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8081", "listen address; :0 picks a free port")
	fs.StringVar(&c.pg, "pg", "", "PostgreSQL URL; empty runs on the embedded store")
	fs.BoolVar(&c.measure.enabled, "measure", false, "measure the pinned bell against the old unanchored read (needs -pg) instead of serving")
	fs.IntVar(&c.measure.partitions, "partitions", 188, "with -measure: partitions (users) to create")
	fs.IntVar(&c.measure.notifications, "notifications", 10000, "with -measure: notifications to spread over them")
	fs.IntVar(&c.measure.samples, "samples", 200, "with -measure: bell opens to time for each shape")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
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
