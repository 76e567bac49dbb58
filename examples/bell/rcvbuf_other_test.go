//go:build !windows

package main

import "syscall"

// setSmallRcvBuf gives the socket fd a 4 KiB receive buffer.
func setSmallRcvBuf(fd uintptr) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
}
