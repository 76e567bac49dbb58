//go:build windows

package main

import "syscall"

// setSmallRcvBuf gives the socket fd a 4 KiB receive buffer (a socket is a
// Handle on Windows).
func setSmallRcvBuf(fd uintptr) error {
	return syscall.SetsockoptInt(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
}
