// Package sockbatch writes to (or reads from) many non-blocking sockets
// with one system call: on Linux, one IORING_OP_SEND (IORING_OP_RECV) per
// socket submitted to an io_uring and one io_uring_enter for the whole
// batch, where doing them one by one costs a write(2) (read(2)) each — a
// kernel entry and exit per socket, which on a virtual machine such as this
// project's test host is dear.
//
// Each operation is made with MSG_DONTWAIT, so the ring never keeps one
// waiting: a socket that is full (or has nothing to read) fails its
// operation with EAGAIN at once, and a socket with room for part of the
// bytes takes that part, exactly as a non-blocking write(2) (read(2))
// would. When Send or Recv returns every operation of the batch has its
// result and the kernel holds none of the caller's buffers. MSG_NOSIGNAL
// makes a write to a closed peer fail with EPIPE rather than raise
// SIGPIPE.
//
// Where io_uring is unavailable — another system, a kernel before 5.18,
// io_uring disabled by the kernel.io_uring_disabled sysctl, or its setup
// refused by a seccomp filter (EPERM, ENOSYS) — New fails with an error
// wrapping errors.ErrUnsupported and the caller writes each socket itself.
//
// A Ring is not safe for concurrent use: give each writing goroutine its
// own. The descriptors of a batch must stay open until Send returns (hold
// them, for example with syscall.RawConn.Control around the call).
package sockbatch

import (
	"errors"
	"fmt"
)

// An Op is one operation of a batch on the socket FD, made once, without
// waiting. For Send, B is what to write, and Send sets N, how many bytes of
// B the socket took (fewer than len(B) when it had room for only part of
// them), and Err, why it took none or not all: nil when it took all or
// part, syscall.EAGAIN when it was full, the error of the socket otherwise
// (EPIPE, ECONNRESET, EBADF, ...), or ErrNotSent when the ring failed
// before the operation was made. For Recv, B is where to read to, and N is
// how many bytes were read (0 with a nil Err: the peer closed), Err
// syscall.EAGAIN when there were none.
type Op struct {
	FD  int
	B   []byte
	N   int
	Err error
}

// ErrNotSent is the Err of an operation the ring did not make because the
// ring itself failed (Send or Recv returned an error): the caller may make
// it itself.
var ErrNotSent = errors.New("sockbatch: not sent: the ring failed")

// ErrStuck is the Err of an operation whose completion did not come within
// completionWait (which a MSG_DONTWAIT operation should never need): the
// ring is closed, and its socket may or may not have taken (given) the
// bytes, so its stream is no longer coherent.
var ErrStuck = errors.New("sockbatch: a send did not complete in time; the ring is closed")

// ErrClosed is returned by Send on a closed or failed Ring.
var ErrClosed = errors.New("sockbatch: the ring is closed")

// MaxEntries bounds the operations one io_uring_enter submits (New's
// entries).
const MaxEntries = 4096

// badEntries is New's error for entries out of range.
func badEntries(entries int) error {
	return fmt.Errorf("sockbatch: %d entries: want 1 to %d", entries, MaxEntries)
}
