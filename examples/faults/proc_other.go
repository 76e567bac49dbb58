//go:build !unix

package main

import (
	"errors"
	"os"
	"runtime"
	"syscall"
)

// errNoPause says why the pause fault cannot run here: stopping a process
// and letting it go on (SIGSTOP, SIGCONT) exists on Unix only.
var errNoPause = errors.New("faults: pausing PostgreSQL needs SIGSTOP and SIGCONT, which " + runtime.GOOS +
	" does not have; run the schedule on Unix (the other faults run here)")

// pause cannot stop a server outside Unix: it says so.
func pause(database) error { return errNoPause }

// unpause has nothing to let go on outside Unix.
func unpause(database) error { return errNoPause }

// ctlProcAttr has nothing to set outside Unix: pg_ctl runs as this
// process's user.
func ctlProcAttr(os.FileInfo) *syscall.SysProcAttr { return nil }

// killSelf ends this process at once (TerminateProcess on Windows): no
// deferred call, no drain.
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	os.Exit(137) // Kill failed: still end without cleaning up
}
