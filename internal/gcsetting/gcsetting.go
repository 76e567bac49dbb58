// Package gcsetting lets an example program's operator choose the
// collector's settings on its command line: -gogc (how far the heap grows
// past the live heap before a cycle starts) and -memory-limit-mib (a soft
// bound the collector keeps the heap under). They are the process's, so
// only a main package applies them; the library sets nothing.
//
// Unset, both leave the collector as the environment (GOGC, GOMEMLIMIT) or
// the runtime's defaults have it: the safe configuration. A larger -gogc
// makes fewer cycles (at 10,000 modules × 256 pollers the registry's
// collector ran every ~0.5 s at the default 100) for more memory between
// them; a -memory-limit-mib then bounds that memory. See
// docs/index-deltas.md for the figures.
package gcsetting

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"runtime/debug"
)

// MaxMemoryLimitMiB is the largest -memory-limit-mib whose byte count fits
// an int64: above it MemoryLimitMiB<<20 wraps (2^43 MiB to MinInt64, 2^44 to
// 0 bytes, 2^44+1 to 1 MiB), so Validate refuses it.
const MaxMemoryLimitMiB = math.MaxInt64 >> 20

// Setting is what the flags chose; zero fields leave the collector alone.
type Setting struct {
	GOGC           int   // > 0: debug.SetGCPercent(GOGC)
	MemoryLimitMiB int64 // > 0: debug.SetMemoryLimit(MemoryLimitMiB << 20)
}

// Register adds -gogc and -memory-limit-mib to fs.
func (s *Setting) Register(fs *flag.FlagSet) {
	fs.IntVar(&s.GOGC, "gogc", 0, "the collector's GOGC for this process (e.g. 400: a cycle when the heap has grown by 4× the live heap; fewer cycles, more memory); 0: as the environment's GOGC, or 100")
	fs.Int64Var(&s.MemoryLimitMiB, "memory-limit-mib", 0, "a soft memory limit for this process in MiB (the collector runs more often near it); 0: as the environment's GOMEMLIMIT, or none")
}

// Validate refuses negative values: GOGC off (-1) is not offered, since a
// process without a limit would then grow without bound. It also refuses a
// limit above MaxMemoryLimitMiB, whose byte count would overflow.
func (s Setting) Validate() error {
	if s.GOGC < 0 || s.MemoryLimitMiB < 0 {
		return errors.New("-gogc and -memory-limit-mib must not be negative (0 leaves the collector as the environment has it)")
	}
	if s.MemoryLimitMiB > MaxMemoryLimitMiB {
		return fmt.Errorf("-memory-limit-mib %d is too large: at most %d (its byte count must fit an int64; 0 sets no limit)", s.MemoryLimitMiB, int64(MaxMemoryLimitMiB))
	}
	return nil
}

// Apply sets what s chose and returns a function that puts back what was
// there before (a program's run may be called more than once in a test).
func (s Setting) Apply() (restore func()) {
	prevGOGC, prevLimit := -2, int64(-1)
	if s.GOGC > 0 {
		prevGOGC = debug.SetGCPercent(s.GOGC)
	}
	if s.MemoryLimitMiB > 0 {
		prevLimit = debug.SetMemoryLimit(s.MemoryLimitMiB << 20)
	}
	return func() {
		if prevGOGC != -2 {
			debug.SetGCPercent(prevGOGC)
		}
		if prevLimit >= 0 {
			debug.SetMemoryLimit(prevLimit)
		}
	}
}
