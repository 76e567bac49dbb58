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

// childrenOf returns the processes whose parent is pid. A PostgreSQL
// backend starts a session of its own, so the server's process group holds
// the postmaster alone; its backends are found as its children.
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		fields := bytes.Fields(rest)
		if len(fields) >= 2 {
			if ppid, err := strconv.Atoi(string(fields[1])); err == nil && ppid == pid {
				out = append(out, child)
			}
		}
	}
	return out
}
