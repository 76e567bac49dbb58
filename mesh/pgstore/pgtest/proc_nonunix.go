//go:build !unix

package pgtest

import "syscall"

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

// isServerOf cannot tell without /proc, so the reaper never signals a process.
func isServerOf(pid int, dataDir string) bool { return false }

// childrenOf is not known here: signals reach the postmaster alone.
func childrenOf(pid int) []int { return nil }
