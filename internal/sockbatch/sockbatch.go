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
// result and the kernel holds none of the caller's buffers — but for the
// case that should never come, an operation still not completed once its
// budget passed and it was cancelled: the ring then keeps its buffer alive
// itself until the kernel gives it back (see StuckError). The waits for
// completions are bounded on an injected clock (Options). MSG_NOSIGNAL
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
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"
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
// Options.CompletionBudget (which a MSG_DONTWAIT operation should never
// need) nor, once it was cancelled, within Options.CancelBudget: whether
// its socket took (gave) bytes is unknown, so its stream is no longer
// coherent, and its buffer is kept alive (see StuckError). The error of
// such a batch is a *StuckError, which errors.Is reports as ErrStuck.
var ErrStuck = errors.New("sockbatch: an operation did not complete in time")

// A StuckError is Send's (Recv's) error when operations of a batch did not
// complete within Options.CompletionBudget. They were then cancelled
// (IORING_OP_ASYNC_CANCEL) and their completions awaited for at most
// Options.CancelBudget before the ring was closed: each operation that
// completed meanwhile has its own result (syscall.ECANCELED when it was
// cancelled before it took or gave any bytes); Kept did not complete even
// so, and each has Err ErrStuck. The kernel may still read (write) their
// buffers, so the ring keeps them alive — never freed for reuse — until it
// has given them back (logged once).
type StuckError struct {
	Op      string        // "send" or "recv"
	Pending int           // operations without a completion at the budget
	Of      int           // operations the batch submitted
	Budget  time.Duration // Options.CompletionBudget
	Kept    int           // of Pending, those still in the kernel after cancelling them for Options.CancelBudget
}

func (e *StuckError) Error() string {
	msg := fmt.Sprintf("sockbatch: waited %v for the completions of %d of %d io_uring %ss of a batch; cancelled them",
		e.Budget, e.Pending, e.Of, e.Op)
	if e.Kept > 0 {
		return msg + fmt.Sprintf(", %d still in the kernel (their buffers are kept); the ring is closed", e.Kept)
	}
	return msg + "; the ring is closed"
}

// Is reports ErrStuck as e's kind.
func (e *StuckError) Is(target error) bool { return target == ErrStuck }

// Options configure a Ring. The zero value is the default.
type Options struct {
	// Clock bounds the waits for completions; nil means the real clock.
	Clock clock.Clock
	// CompletionBudget bounds the wait for a batch's completions once it
	// is submitted; zero or less means DefaultCompletionBudget.
	CompletionBudget time.Duration
	// CancelBudget bounds the wait for the completions of the operations
	// cancelled after CompletionBudget; zero or less means
	// DefaultCancelBudget.
	CancelBudget time.Duration
	// Logger receives the warning that buffers are kept; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Default budgets of Options. A MSG_DONTWAIT operation completes while it
// is submitted, so the completion wait is normally not entered at all.
const (
	DefaultCompletionBudget = time.Second
	DefaultCancelBudget     = time.Second
)

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.CompletionBudget <= 0 {
		o.CompletionBudget = DefaultCompletionBudget
	}
	if o.CancelBudget <= 0 {
		o.CancelBudget = DefaultCancelBudget
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// ErrClosed is returned by Send on a closed or failed Ring.
var ErrClosed = errors.New("sockbatch: the ring is closed")

// MaxEntries bounds the operations one io_uring_enter submits (New's
// entries).
const MaxEntries = 4096

// OptionsError reports an argument of New it cannot make a ring with, on
// every platform: a caller's mistake, never errors.ErrUnsupported.
type OptionsError struct {
	Setting string // e.g. "entries"
	Problem string // the value given and the range allowed
}

func (e *OptionsError) Error() string { return "sockbatch: " + e.Setting + " " + e.Problem }

// badEntries is New's error for entries out of range.
func badEntries(entries int) error {
	return &OptionsError{Setting: "entries", Problem: fmt.Sprintf("is %d: want 1 to %d (MaxEntries)", entries, MaxEntries)}
}
