//go:build !amd64 && !arm64

package rx

import "runtime"

// curg identifies the calling goroutine by its id, read from the header of
// its stack trace. It is the portable fallback of the assembly version used
// on amd64 and arm64, and costs about a microsecond.
func curg() uintptr {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	// "goroutine 123 [running]:"
	var id uintptr
	for _, c := range b[len("goroutine "):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uintptr(c-'0')
	}
	return id<<1 + 2 // even and never 0, as the mailbox's owner word needs
}
