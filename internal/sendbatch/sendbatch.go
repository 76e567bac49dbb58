// Package sendbatch writes to many non-blocking sockets with one system
// call: on Linux, one IORING_OP_SEND per socket submitted to an io_uring
// and one io_uring_enter for the whole batch, where writing them one by one
// costs a write(2) each — a kernel entry and exit per socket, which on a
// virtual machine such as this project's test host is dear.
//
// Each send is made with MSG_DONTWAIT, so the ring never keeps one waiting
// for room: a socket that is full fails its send with EAGAIN at once, and a
// socket with room for part of the bytes takes that part, exactly as a
// non-blocking write(2) would. When Send returns every send of the batch
// has its result and the kernel holds none of the caller's buffers.
// MSG_NOSIGNAL makes a write to a closed peer fail with EPIPE rather than
// raise SIGPIPE.
//
// Where io_uring is unavailable — another system, a kernel before 5.18,
// io_uring disabled by the kernel.io_uring_disabled sysctl, or its setup
// refused by a seccomp filter (EPERM, ENOSYS) — New fails with an error
// wrapping errors.ErrUnsupported and the caller writes each socket itself.
//
// A Ring is not safe for concurrent use: give each writing goroutine its
// own. The descriptors of a batch must stay open until Send returns (hold
// them, for example with syscall.RawConn.Control around the call).
package sendbatch

import (
	"errors"
	"fmt"
)

// A Send is one write of a batch: B to the socket FD, once, without waiting.
// Send sets N, how many bytes of B the socket took (fewer than len(B) when
// it had room for only part of them), and Err, why it took none or not all:
// nil when it took all or part, syscall.EAGAIN when it was full, the error
// of the socket otherwise (EPIPE, ECONNRESET, EBADF, ...), or ErrNotSent
// when the ring failed before the send was made.
type Send struct {
	FD  int
	B   []byte
	N   int
	Err error
}

// ErrNotSent is the Err of a send the ring did not make because the ring
// itself failed (Send returned an error): the caller may write it itself.
var ErrNotSent = errors.New("sendbatch: not sent: the ring failed")

// ErrStuck is the Err of a send whose completion did not come within
// completionWait (which a MSG_DONTWAIT send should never need): the ring
// is closed, and its socket may or may not have taken the bytes, so its
// stream is no longer coherent.
var ErrStuck = errors.New("sendbatch: a send did not complete in time; the ring is closed")

// ErrClosed is returned by Send on a closed or failed Ring.
var ErrClosed = errors.New("sendbatch: the ring is closed")

// MaxEntries bounds the sends one io_uring_enter submits (New's entries).
const MaxEntries = 4096

// badEntries is New's error for entries out of range.
func badEntries(entries int) error {
	return fmt.Errorf("sendbatch: %d entries: want 1 to %d", entries, MaxEntries)
}
