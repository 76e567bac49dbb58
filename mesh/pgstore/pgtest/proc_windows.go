//go:build windows

package pgtest

import (
	"math"

	"golang.org/x/sys/windows"
)

// processExists reports whether process pid is running. Windows opens a
// process that has exited for as long as a handle to it is open (and
// os.FindProcess succeeds then), so the process is opened and asked for
// its exit code: windowsProcessLive decides.
func processExists(pid int) bool {
	if pid <= 0 || pid > math.MaxUint32 {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return windowsProcessLive(err, 0, nil)
	}
	defer windows.CloseHandle(h)
	var code uint32
	err = windows.GetExitCodeProcess(h, &code)
	return windowsProcessLive(nil, code, err)
}
