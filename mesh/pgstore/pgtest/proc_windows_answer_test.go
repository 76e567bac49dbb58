package pgtest

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// processExists on Windows reads OpenProcess and GetExitCodeProcess; what
// it makes of their answers is decided here, on every OS. An exited
// process whose object a handle keeps open (OpenProcess succeeds) is not
// running. Negative control (run): with every answer read as running, which
// is what main's rule came to on Windows (os.FindProcess succeeding, or
// failing other than with ErrNotExist, meant alive; 658dd9b), the four rows
// of a process that is not running failed.
func TestWindowsAnswersAreReadAsAProcessRunningOnlyWhileItHasNoExitCode(t *testing.T) {
	accessDenied := syscall.Errno(5) // ERROR_ACCESS_DENIED
	for _, c := range []struct {
		name    string
		openErr error
		code    uint32
		codeErr error
		live    bool
	}{
		{"no process has the id", winErrorInvalidParameter, 0, nil, false},
		{"no process has the id (wrapped)", fmt.Errorf("OpenProcess: %w", winErrorInvalidParameter), 0, nil, false},
		{"exited, a handle keeps its object", nil, 0, nil, false},
		{"exited with a failure code", nil, 1, nil, false},
		{"running", nil, winStillActive, nil, true},
		{"access denied: it may run, its directory stays", accessDenied, 0, nil, true},
		{"the exit code cannot be read: its directory stays", nil, 0, errors.New("GetExitCodeProcess failed"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.live, windowsProcessLive(c.openErr, c.code, c.codeErr))
		})
	}
}
