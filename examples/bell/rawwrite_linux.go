//go:build linux

package main

import (
	"syscall"
	"unsafe"
)

// writeFD writes b to the socket fd once, without waiting. The socket is
// non-blocking, so the write never sleeps: it is made as a raw system
// call, which keeps the goroutine's P (no entersyscall/exitsyscall), so
// the runtime's monitor finds no P in a system call to hand off — with a
// syscall per stream per broadcast, those handoffs and the thread wakes
// they cause cost the bell more than the bookkeeping they save.
//
// Only on Linux: elsewhere SYS_WRITE is missing (solaris, illumos, aix)
// or raw system calls fail (OpenBSD returns ENOSYS), and rawwrite_unix.go
// uses syscall.Write.
//
// The race detector does not see this write: syscall.Write tells it that
// the write reads b (race.ReadRange) and orders it after the fd's earlier
// writes (race.ReleaseMerge); RawSyscall does neither. That loses no check
// worth having: the kernel reads b only within the call, and b is not
// written by anyone meanwhile — it is the writer's own buffer, just filled
// on this goroutine (take) from the event's encoding, which is shared and
// never written after it is made — and a stream's writes are serialised by
// its busy flag (set and cleared under es.mu, which the detector does see;
// see kick and take), so no two writes of one socket overlap.
func writeFD(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return int(n), errno
	}
	return int(n), nil
}
