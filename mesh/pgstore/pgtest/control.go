package pgtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
)

// ErrNotLocal is returned by the outage controls of a Server this process
// did not start (one named by a URL): only a local server can be stopped,
// restarted or paused from here.
var ErrNotLocal = errors.New("pgtest: the server was not started by this process")

// ErrNoSignals is returned by SignalServer and Server.Signal where the OS
// has no process signals: the server cannot be stopped or resumed in place.
// It is declared on every OS so that callers can test for it anywhere.
var ErrNoSignals = errors.New("pgtest: process signals are not supported on this OS")

// The outage controls below let a test or drill take a local server away and
// bring it back on the same port with the same data, as an operator or a
// crash would. Call them from one goroutine at a time, not concurrently with
// Stop; a server left halted or paused is still released by Stop.

// Halt shuts the local server down (pg_ctl stop -m fast: sessions are
// terminated, new connections refused) and waits, within the stop budget,
// until it has exited. Its data and port stay reserved for Resume.
func (s *Server) Halt(ctx context.Context) error {
	c, err := s.controlled()
	if err != nil {
		return err
	}
	select {
	case <-c.exited:
		return nil // already down
	default:
	}
	budget := s.cfg.stopBudget()
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	secs := strconv.Itoa(max(1, int(budget.Seconds())))
	if err := c.run(ctx, budget, "pg_ctl stop", c.bins.PgCtl, "stop", "-D", c.dataDir, "-m", "fast", "-w", "-t", secs); err != nil {
		return err
	}
	select {
	case <-c.exited:
		return nil
	case <-ctx.Done():
		return &WaitError{What: fmt.Sprintf("PostgreSQL (pid %d) to exit after pg_ctl stop", c.proc.Pid), Budget: budget, Err: ctx.Err()}
	}
}

// Resume starts a halted local server again on its port and waits, within
// the start budget, until it accepts connections. On a running server it
// does nothing.
func (s *Server) Resume(ctx context.Context) error {
	c, err := s.controlled()
	if err != nil {
		return err
	}
	select {
	case <-c.exited:
	default:
		return nil
	}
	budget := s.cfg.startBudget()
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	return c.launch(ctx, budget)
}

// Restart is a fast restart: Halt, then Resume.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Halt(ctx); err != nil {
		return err
	}
	return s.Resume(ctx)
}

// Signal sends sig to every process of the local server, the postmaster
// and its children (Linux; elsewhere the postmaster alone): SIGSTOP makes the database hang
// rather than refuse, SIGCONT lets it go on.
func (s *Server) Signal(sig syscall.Signal) error {
	c, err := s.controlled()
	if err != nil {
		return err
	}
	select {
	case <-c.exited:
		return fmt.Errorf("pgtest: signalling PostgreSQL: the server is not running")
	default:
	}
	return SignalServer(c.proc.Pid, sig)
}

// SignalServer sends sig to the PostgreSQL postmaster pid (the first line
// of its data directory's postmaster.pid), then to each of its children:
// backends and auxiliary processes each run in a session of their own, so
// signalling the process group is not enough. Stopped first, the postmaster
// forks no child the loop could miss. Children are found on Linux only;
// outside Unix no signal can be sent and it returns ErrNoSignals.
func SignalServer(pid int, sig syscall.Signal) error {
	if err := signalProcess(pid, sig); err != nil {
		return fmt.Errorf("pgtest: sending %s to PostgreSQL (pid %d): %w", sig, pid, err)
	}
	var errs []error
	for _, child := range childrenOf(pid) {
		if err := signalProcess(child, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("pgtest: sending %s to PostgreSQL's process %d: %w", sig, child, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Server) controlled() (*cluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, ErrStopped
	}
	if s.local == nil {
		return nil, ErrNotLocal
	}
	return s.local, nil
}
