//go:build unix

package main

import (
	"net"
	"syscall"
	"unsafe"
)

// lingerZero sets SO_LINGER {on, 0} on the descriptor of raw, so that its
// close resets the connection and drops what the socket still holds.
func lingerZero(raw syscall.RawConn) error {
	var serr error
	err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 0})
	})
	if err != nil {
		return err
	}
	return serr
}

// rawConn is conn's descriptor, or nil when it offers none.
func rawConn(conn net.Conn) syscall.RawConn {
	if sc, ok := conn.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			return raw
		}
	}
	return nil
}

// writeFD writes b to the socket fd once, without waiting. The socket is
// non-blocking, so the write never sleeps: it is made as a raw system
// call, which keeps the goroutine's P (no entersyscall/exitsyscall), so
// the runtime's monitor finds no P in a system call to hand off — with a
// syscall per stream per broadcast, those handoffs and the thread wakes
// they cause cost the bell more than the bookkeeping they save.
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
