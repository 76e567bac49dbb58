package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// dirPrefix starts the name of every local server's directory; the owning
// process id follows, so a reaper can tell a live server from a leftover.
const dirPrefix = "meshrx-pgtest-"

// superuser is the role initdb creates and the tests connect as.
const superuser = "postgres"

// serverSettings trade durability for speed (the data is thrown away) and
// allow many concurrent test connections.
func serverSettings() []string {
	return []string{
		"fsync=off",
		"synchronous_commit=off",
		"full_page_writes=off",
		"max_connections=200",
		"log_min_messages=warning",
	}
}

// cluster is a throwaway PostgreSQL cluster run by this process.
type cluster struct {
	bins    Binaries
	dir     string // owned by the server's OS user; holds data/, the socket and server.log
	dataDir string
	port    int
	cred    *credential // the OS user to run as; nil: this process's user
	logger  *slog.Logger

	proc   *os.Process
	exited chan struct{} // closed when the server process has exited
}

func (c *cluster) url() string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", superuser, c.port)
}

func (c *cluster) logPath() string { return filepath.Join(c.dir, "server.log") }

// startCluster initdbs a cluster in a fresh directory and starts it. On error
// nothing is left running and the directory is gone.
func startCluster(ctx context.Context, cfg Config) (_ *cluster, err error) {
	parent := cfg.TempDir
	if parent == "" {
		parent = os.TempDir()
	}
	logger := cfg.logger()
	reapStale(parent, logger)

	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, dirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: creating the server directory: %w", err)
	}
	c := &cluster{bins: cfg.Binaries, dir: dir, dataDir: filepath.Join(dir, "data"), cred: cred, logger: logger}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.stop(cfg.stopBudget()))
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("pgtest: handing %s to the postgres OS user: %w", dir, err)
		}
	}

	if err := c.run(ctx, cfg.startBudget(), "initdb", c.bins.Initdb,
		"-D", c.dataDir, "-U", superuser, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return nil, err
	}

	// Another process can take the free port between our probe and the
	// server's bind; that shows as an early exit, so try a few ports.
	const attempts = 5
	for attempt := 1; ; attempt++ {
		err := c.startServer(ctx, cfg.startBudget())
		if err == nil {
			logger.Info("pgtest: PostgreSQL started", "dir", c.dir, "port", c.port, "bin", c.bins.Dir())
			return c, nil
		}
		var busy *portBusyError
		if !errors.As(err, &busy) {
			return nil, err
		}
		if attempt == attempts {
			return nil, fmt.Errorf("pgtest: starting PostgreSQL: no free port after %d attempts: %w", attempts, err)
		}
		logger.Info("pgtest: port taken, trying another", "port", busy.port)
	}
}

type portBusyError struct{ port int }

func (e *portBusyError) Error() string { return fmt.Sprintf("port %d is in use", e.port) }

// startServer runs postgres on a free port and waits until it accepts
// connections.
func (c *cluster) startServer(ctx context.Context, budget time.Duration) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.port = port
	return c.launch(ctx, budget)
}

// launch runs postgres on c.port and waits until it accepts connections.
func (c *cluster) launch(ctx context.Context, budget time.Duration) error {
	// Truncated per attempt, so a failure is read from this attempt's log only.
	logFile, err := os.OpenFile(c.logPath(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: opening the server log: %w", err)
	}
	defer logFile.Close() // the child keeps its own descriptor

	args := []string{"-D", c.dataDir, "-p", strconv.Itoa(c.port), "-h", "127.0.0.1", "-k", c.dir}
	for _, s := range serverSettings() {
		args = append(args, "-c", s)
	}
	cmd := exec.Command(c.bins.Postgres, args...)
	cmd.Dir = c.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = serverProcAttr(c.cred)

	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		// The kernel sends the parent-death signal when the thread that forked
		// the server exits, not only when this process does. Keep that thread
		// for the server's lifetime; it ends (and is discarded) after the exit.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait() // the exit status is in the log; shutting down is the normal end
		close(exited)
	}()
	if err := <-started; err != nil { // bounded: Start returns once fork/exec is done
		return fmt.Errorf("pgtest: starting %s: %w", c.bins.Postgres, err)
	}
	c.proc, c.exited = cmd.Process, exited
	return c.waitReady(ctx, budget)
}

// waitReady polls the server until it accepts a connection, it exits, or ctx
// (bounded by the start budget) runs out.
func (c *cluster) waitReady(ctx context.Context, budget time.Duration) error {
	retry := time.NewTimer(0)
	defer retry.Stop()
	var last error
	for {
		select {
		case <-c.exited:
			tail := logTail(c.logPath())
			if strings.Contains(tail, "could not bind") || strings.Contains(tail, "already in use") {
				return &portBusyError{port: c.port}
			}
			return fmt.Errorf("pgtest: PostgreSQL exited while starting; its log ends:\n%s", tail)
		case <-ctx.Done():
			// The directory (and log) goes with the failed start: quote the log.
			return &WaitError{
				What:   fmt.Sprintf("PostgreSQL on 127.0.0.1:%d to accept connections", c.port),
				Budget: budget,
				Err:    fmt.Errorf("%w; last attempt: %v; server log ends:\n%s", ctx.Err(), last, logTail(c.logPath())),
			}
		case <-retry.C:
		}
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgconn.Connect(attempt, c.url())
		if err == nil {
			_ = conn.Close(attempt) // it answered: ready, whatever the goodbye does
			cancel()
			return nil
		}
		cancel()
		last = err
		retry.Reset(20 * time.Millisecond)
	}
}

// stop shuts the server down with pg_ctl stop -m fast, kills it if it has
// not exited within budget, and removes the directory.
func (c *cluster) stop(budget time.Duration) error {
	var errs []error
	if c.proc != nil {
		errs = append(errs, c.shutdown(budget))
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("pgtest: removing %s: %w", c.dir, err))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.logger.Info("pgtest: PostgreSQL stopped", "dir", c.dir)
	return nil
}

func (c *cluster) shutdown(budget time.Duration) error {
	select {
	case <-c.exited:
		return nil
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	secs := strconv.Itoa(max(1, int(budget/time.Second)))
	ctlErr := c.run(ctx, budget, "pg_ctl stop", c.bins.PgCtl, "stop", "-D", c.dataDir, "-m", "fast", "-w", "-t", secs)
	if ctlErr == nil {
		// pg_ctl -w returns once the postmaster has removed its pid file; its
		// process exit follows at once.
		select {
		case <-c.exited:
			return nil
		case <-ctx.Done():
		}
	}
	select {
	case <-c.exited:
		return nil // it stopped anyway; a pg_ctl complaint no longer matters
	default:
	}
	// pg_ctl failed or the server ignored it: it must not outlive the tests.
	killErr := c.proc.Kill()
	const killBudget = 10 * time.Second
	kill := time.NewTimer(killBudget)
	defer kill.Stop()
	select {
	case <-c.exited:
		return fmt.Errorf("pgtest: PostgreSQL (pid %d) did not stop and was killed: %w", c.proc.Pid, errors.Join(ctlErr, ctx.Err()))
	case <-kill.C:
		return &WaitError{
			What:   fmt.Sprintf("PostgreSQL (pid %d) to exit after pg_ctl stop and SIGKILL", c.proc.Pid),
			Budget: budget + killBudget,
			Err:    errors.Join(ctlErr, killErr),
		}
	}
}

// run runs one of the server programs to completion as the server's OS user,
// bounded by ctx; a failure carries the program's output.
func (c *cluster) run(ctx context.Context, budget time.Duration, what, program string, args ...string) error {
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = toolProcAttr(c.cred)
	cmd.WaitDelay = 5 * time.Second // a stray grandchild holding the pipe cannot stall us
	// The tool's parent-death signal (SIGKILL) is sent when the thread that
	// forked it exits, as launch says: run it from a thread of its own, kept
	// until it has ended. Forked from a shared thread, it was killed when a
	// server's launch goroutine, which had later locked that same thread,
	// ended with its server (initdb "signal: killed" under parallel tests).
	ran := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ran <- cmd.Run()
	}()
	err := <-ran // bounded by ctx: CommandContext kills the tool, WaitDelay its pipes
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &WaitError{What: what + " (" + program + ")", Budget: budget, Err: fmt.Errorf("%w; output:\n%s", ctxErr, out.String())}
	}
	return fmt.Errorf("pgtest: %s (%s) failed: %w; output:\n%s", what, program, err, strings.TrimSpace(out.String()))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logTail returns the last few kilobytes of a log file, for error messages.
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	const max = 4 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(-max, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
}
