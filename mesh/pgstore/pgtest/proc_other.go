//go:build !unix && !windows

package pgtest

import (
	"errors"
	"os"
)

// processExists reports whether a process with this id can be found. Any
// error counts as existing (the OS may refuse to open a live process), so
// the reaper never removes the directory of a process it could not look
// at: a crashed test binary's directory may then stay behind.
func processExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	_ = p.Release()
	return true
}
