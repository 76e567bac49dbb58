//go:build !unix

package main

import (
	"errors"
	"net"
	"syscall"
)

// lingerZero is unsupported here: the stream's connection is closed plainly.
func lingerZero(syscall.RawConn) error { return errors.ErrUnsupported }

// rawConn offers no descriptor here: streams are written through the
// connection with a deadline.
func rawConn(net.Conn) syscall.RawConn { return nil }

// writeFD is never reached here (rawConn is nil).
func writeFD(uintptr, []byte) (int, error) { return 0, errors.ErrUnsupported }
