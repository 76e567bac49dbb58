//go:build unix

package main

import (
	"net"
	"syscall"
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
