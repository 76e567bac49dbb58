package pgtest

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// serverProcAttr runs the server as cred in its own process group, and has
// the kernel send it SIGQUIT (immediate shutdown) if this process dies
// without stopping it: a test binary that panics or is killed must not leave
// a server behind.
func serverProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
}

// toolProcAttr runs initdb or pg_ctl as cred; they die with this process.
func toolProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}

// isServerOf reports whether process pid is a postgres server for dataDir,
// so that a reaper never signals an unrelated process that reused a pid.
func isServerOf(pid int, dataDir string) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	for _, arg := range bytes.Split(cmdline, []byte{0}) {
		if string(arg) == dataDir {
			return true
		}
	}
	return false
}
