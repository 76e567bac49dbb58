//go:build unix

package main

import (
	"os"
	"syscall"
)

// pause stops every process of the server (SIGSTOP): the database hangs
// rather than refuses.
func pause(db database) error { return db.Signal(syscall.SIGSTOP) }

// unpause lets a paused server go on (SIGCONT).
func unpause(db database) error { return db.Signal(syscall.SIGCONT) }

// ctlProcAttr runs pg_ctl as the owner of the data directory (fi is its
// postmaster.pid) when this process is root, which PostgreSQL refuses.
func ctlProcAttr(fi os.FileInfo) *syscall.SysProcAttr {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: st.Uid, Gid: st.Gid}}
	}
	return nil
}

// killSelf ends this process at once (SIGKILL): no deferred call, no
// drain, connections cut as a crash cuts them.
func killSelf() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
