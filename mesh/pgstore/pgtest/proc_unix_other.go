//go:build unix && !linux

package pgtest

import "syscall"

// serverProcAttr runs the server as cred in its own process group. Outside
// Linux there is no parent-death signal, so a test binary that is killed
// leaves its server running.
func serverProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true}
}

// toolProcAttr runs initdb or pg_ctl as cred.
func toolProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}

// isServerOf cannot tell without /proc, so the reaper never signals a process.
func isServerOf(pid int, dataDir string) bool { return false }

// childrenOf is not known here: signals reach the postmaster alone.
func childrenOf(pid int) []int { return nil }
