//go:build !unix

package main

import (
	"errors"
	"syscall"
)

// lingerZero is unsupported here: the stream's connection is closed plainly.
func lingerZero(syscall.RawConn) error { return errors.ErrUnsupported }
