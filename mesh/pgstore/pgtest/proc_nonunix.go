//go:build !unix

package pgtest

import (
	"errors"
	"os"
	"syscall"
)

// credential is the OS user the server programs run as; outside Unix they
// always run as this process's user.
type credential struct{ Uid, Gid uint32 }

// serverCredential is nil: the server runs as this process's user.
func serverCredential() (*credential, error) { return nil, nil }

// serverProcAttr has nothing to set outside Unix.
func serverProcAttr(*credential) *syscall.SysProcAttr { return nil }

// toolProcAttr has nothing to set outside Unix.
func toolProcAttr(*credential) *syscall.SysProcAttr { return nil }

// signalProcess cannot signal outside Unix.
func signalProcess(int, syscall.Signal) error { return ErrNoSignals }

// processExists reports whether a process with this id can be found. Any
// error counts as existing (the OS may refuse to open a live process), so
// the reaper never removes the directory of a process it could not look
// at: a crashed test binary's directory may then stay behind.
func processExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	_ = p.Release()
	return true
}

// isServerOf cannot tell without /proc, so the reaper never signals a process.
func isServerOf(pid int, dataDir string) bool { return false }

// childrenOf is not known here: signals reach the postmaster alone.
func childrenOf(pid int) []int { return nil }
