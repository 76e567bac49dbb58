//go:build amd64 || arm64

package rx

// curg identifies the calling goroutine: it returns the address of the
// runtime's descriptor of the goroutine (never dereferenced), which is unique
// among live goroutines. It costs about a nanosecond. The mailbox uses it to
// tell a re-entrant call, made from inside a delivery, from a call made by
// another goroutine: the first must never wait, the second waits when the
// queue is full.
func curg() uintptr
