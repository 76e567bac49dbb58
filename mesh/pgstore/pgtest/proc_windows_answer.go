package pgtest

import (
	"errors"
	"syscall"
)

// Windows' answers processExists reads, as numbers, so that
// windowsProcessLive builds and is tested on every OS.
const (
	// winErrorInvalidParameter is OpenProcess's error for an id no process
	// has (ERROR_INVALID_PARAMETER).
	winErrorInvalidParameter = syscall.Errno(87)
	// winStillActive is GetExitCodeProcess's code for a process that has
	// not exited (STILL_ACTIVE).
	winStillActive = 259
)

// windowsProcessLive decides from Windows' answers whether a process is
// running: openErr is OpenProcess's error (nil when it opened the
// process), code and codeErr GetExitCodeProcess's answer. An id no process
// has is not running; a process that could not be opened (access denied)
// or asked is counted as running, so the reaper never removes a directory
// it cannot vouch for; one with an exit code has exited (its object stays
// while some handle to it is open). A process that exited with code 259
// looks running: its directory stays behind, which is the safe mistake.
func windowsProcessLive(openErr error, code uint32, codeErr error) bool {
	switch {
	case errors.Is(openErr, winErrorInvalidParameter):
		return false
	case openErr != nil, codeErr != nil:
		return true
	}
	return code == winStillActive
}
