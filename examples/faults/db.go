package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
)

// database is what the schedule needs to take PostgreSQL away and bring it
// back. *pgtest.Server is one (the throwaway server); pgCtl is the other
// (a server named by -pg, controlled with pg_ctl on its data directory).
type database interface {
	Halt(ctx context.Context) error   // stop -m fast, wait for the exit
	Resume(ctx context.Context) error // start, wait until it accepts connections
	Signal(sig syscall.Signal) error  // SIGSTOP / SIGCONT every server process (Unix; see pause)
}

var _ database = (*pgtest.Server)(nil)

// ctlBudget bounds one pg_ctl run.
const ctlBudget = 60 * time.Second

// pgCtl controls the server whose data directory is dir with pg_ctl, run
// as the directory's owner when this process is root (PostgreSQL refuses
// root).
type pgCtl struct {
	bin  string               // pg_ctl
	dir  string               // data directory
	attr *syscall.SysProcAttr // the directory's owner when this process is root (see ctlProcAttr)
}

func newPgCtl(dir string) (*pgCtl, error) {
	bins, err := pgtest.FindBinaries(os.Getenv("PATH"), pgtest.DebianRoot)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return nil, fmt.Errorf("-pg-ctl %s: not the data directory of a running server: %w", dir, err)
	}
	return &pgCtl{bin: bins.PgCtl, dir: dir, attr: ctlProcAttr(fi)}, nil
}

func (c *pgCtl) run(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, ctlBudget)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append(args, "-D", c.dir, "-w", "-t", strconv.Itoa(int(ctlBudget.Seconds())))...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = c.attr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("waiting (at most %s) for pg_ctl %s: %w: %s", ctlBudget, args[0], ctx.Err(), out.String())
		}
		return fmt.Errorf("pg_ctl %s: %w: %s", args[0], err, strings.TrimSpace(out.String()))
	}
	return nil
}

func (c *pgCtl) Halt(ctx context.Context) error { return c.run(ctx, "stop", "-m", "fast") }
func (c *pgCtl) Resume(ctx context.Context) error {
	return c.run(ctx, "start", "-l", filepath.Join(c.dir, "faults-server.log"))
}

// Signal sends sig to the postmaster and each of its children (every
// backend runs in a session of its own, so the process group is not enough).
func (c *pgCtl) Signal(sig syscall.Signal) error {
	b, err := os.ReadFile(filepath.Join(c.dir, "postmaster.pid"))
	if err != nil {
		return err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return fmt.Errorf("reading postmaster.pid: %w", err)
	}
	return pgtest.SignalServer(pid, sig)
}

// terminateAll ends every backend of the database but the caller's,
// the replicas' listeners included, and says how many it ended.
func terminateAll(ctx context.Context, url string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000))
		FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n)
	return n, err
}
