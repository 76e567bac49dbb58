//go:build unix

package main

import (
	"syscall"
	"time"
)

// cpuTime is this process's user + system CPU so far (getrusage), zero
// when it cannot be read.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
