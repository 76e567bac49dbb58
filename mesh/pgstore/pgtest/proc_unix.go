//go:build unix

package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// credential is the OS user the server programs run as.
type credential = syscall.Credential

// serverCredential returns the OS user to run the server programs as: nil
// for a normal user; the postgres user when running as root, which
// PostgreSQL refuses.
func serverCredential() (*credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, which PostgreSQL refuses, and there is no postgres OS user to run it as "+
			"(`%s` creates one, or run the tests as a normal user): %w", InstallHint, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("pgtest: the postgres OS user has a non-numeric id: %w", err)
	}
	return &credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// signalProcess sends sig to process pid.
func signalProcess(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// processExists reports whether a process with this id exists (it may
// belong to another user).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
