//go:build unix && !linux

package main

import "syscall"

// writeFD writes b to the socket fd once; the socket is non-blocking, so
// the write never sleeps. Linux makes it a raw system call
// (rawwrite_linux.go); here that is unavailable (no SYS_WRITE on solaris,
// illumos and aix; ENOSYS from raw system calls on OpenBSD), so it is an
// ordinary one.
func writeFD(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, err := syscall.Write(int(fd), b)
	if n < 0 {
		n = 0
	}
	return n, err
}
