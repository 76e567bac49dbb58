//go:build unix

package memstore_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used (user and system, every
// thread, the collector's included). Unlike wall time it does not count the
// time spent waiting for a core, which on a shared 2-vCPU machine is most of
// the noise.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
