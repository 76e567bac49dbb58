//go:build linux

package sockbatch

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// The io_uring ABI (include/uapi/linux/io_uring.h) as far as it is used here.
const (
	sysIOUringSetup = 425 // the same number on every architecture since 5.1
	sysIOUringEnter = 426

	setupSubmitAll = 1 << 7 // IORING_SETUP_SUBMIT_ALL (5.18): a send failing does not stop the batch

	featSingleMmap = 1 << 0 // IORING_FEAT_SINGLE_MMAP
	featNoDrop     = 1 << 1 // IORING_FEAT_NODROP
	featExtArg     = 1 << 8 // IORING_FEAT_EXT_ARG: a timeout on the wait

	enterGetEvents = 1 << 0 // IORING_ENTER_GETEVENTS
	enterExtArg    = 1 << 3 // IORING_ENTER_EXT_ARG

	offSQRing = 0
	offSQEs   = 0x10000000

	opAsyncCancel = 14 // IORING_OP_ASYNC_CANCEL: addr is the user data of the operation to cancel
	opSend        = 26 // IORING_OP_SEND
	opRecv        = 27 // IORING_OP_RECV

	msgDontWait = 0x40   // MSG_DONTWAIT: a full socket fails the send with EAGAIN, never queues it
	msgNoSignal = 0x4000 // MSG_NOSIGNAL: EPIPE, not SIGPIPE
)

// cancelTag marks the user data of a cancellation (the cancelled
// operation's index | cancelTag), so reap tells it from an operation's.
const cancelTag = 1 << 63

// waitSlice is how long one wait in the kernel for completions lasts before
// the budget, on the injected clock, is looked at again.
const waitSlice = 5 * time.Millisecond

// keptSlice is how long the keeper of buffers still in the kernel waits in
// the kernel at a time (see keep).
const keptSlice = time.Minute

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// sqe is struct io_uring_sqe (64 bytes).
type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	msgFlags    uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFDIn  int32
	addr3       uint64
	_           uint64
}

// cqe is struct io_uring_cqe (16 bytes).
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// geteventsArg is struct io_uring_getevents_arg.
type geteventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

// Ring is one io_uring through which batches of sends are made.
type Ring struct {
	fd      int
	ring    []byte // the SQ and CQ rings (one mapping)
	sqeMem  []byte
	entries uint32

	sqHead, sqTail *uint32
	sqMask         uint32
	sqes           []sqe
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []cqe

	opts   Options
	closed bool
	kept   bool          // operations the kernel did not give back: the ring and their buffers are the keeper's (see keep)
	held   *atomic.Int64 // how many of them the kernel still holds; shared with the keeper's copy of the Ring
}

// New sets up a ring for batches of up to entries sends each (larger
// batches are submitted entries at a time), its waits bounded as opts say.
// It fails with an error wrapping errors.ErrUnsupported when io_uring is
// unavailable here, and with an *OptionsError when entries is not 1 to
// MaxEntries.
func New(entries int, opts Options) (*Ring, error) {
	if entries < 1 || entries > MaxEntries {
		return nil, badEntries(entries)
	}
	var p params
	p.flags = setupSubmitAll
	fd, _, errno := syscall.Syscall(sysIOUringSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		// ENOSYS: no io_uring; EPERM: disabled by sysctl or refused by
		// seccomp; EINVAL: a kernel without SUBMIT_ALL (before 5.18).
		return nil, fmt.Errorf("sockbatch: io_uring_setup: %w (%w)", errno, errors.ErrUnsupported)
	}
	r := &Ring{fd: int(fd), entries: p.sqEntries, opts: opts.withDefaults(), held: new(atomic.Int64)}
	syscall.CloseOnExec(r.fd)
	if p.features&(featSingleMmap|featNoDrop|featExtArg) != featSingleMmap|featNoDrop|featExtArg {
		r.Close()
		return nil, fmt.Errorf("sockbatch: io_uring lacks features (have %#x): %w", p.features, errors.ErrUnsupported)
	}
	size := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	ring, err := syscall.Mmap(r.fd, offSQRing, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("sockbatch: mapping the rings: %w (%w)", err, errors.ErrUnsupported)
	}
	r.ring = ring
	sqeMem, err := syscall.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("sockbatch: mapping the entries: %w (%w)", err, errors.ErrUnsupported)
	}
	r.sqeMem = sqeMem
	r.sqHead = (*uint32)(unsafe.Pointer(&ring[p.sqOff.head]))
	r.sqTail = (*uint32)(unsafe.Pointer(&ring[p.sqOff.tail]))
	r.sqMask = *(*uint32)(unsafe.Pointer(&ring[p.sqOff.ringMask]))
	r.cqHead = (*uint32)(unsafe.Pointer(&ring[p.cqOff.head]))
	r.cqTail = (*uint32)(unsafe.Pointer(&ring[p.cqOff.tail]))
	r.cqMask = *(*uint32)(unsafe.Pointer(&ring[p.cqOff.ringMask]))
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&sqeMem[0])), p.sqEntries)
	r.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&ring[p.cqOff.cqes])), p.cqEntries)
	// Slot i of the submission array always names entry i: entries are
	// filled in ring order.
	array := unsafe.Slice((*uint32)(unsafe.Pointer(&ring[p.sqOff.array])), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	return r, nil
}

// Send makes every send of sends once, without waiting, submitting them
// entries at a time with one io_uring_enter each, and sets each one's N and
// Err. It returns an error only when the ring itself failed (it is then
// closed): the sends it did not make have Err ErrNotSent; when some did not
// complete within Options.CompletionBudget the error is a *StuckError.
func (r *Ring) Send(sends []Op) error { return r.do(opSend, msgDontWait|msgNoSignal, sends) }

// Recv makes every read of ops once, without waiting, as Send makes sends.
func (r *Ring) Recv(ops []Op) error { return r.do(opRecv, msgDontWait|msgNoSignal, ops) }

// do makes the operations op of ops with msgFlags, entries at a time.
func (r *Ring) do(op uint8, msgFlags uint32, ops []Op) error {
	var err error
	for len(ops) > 0 {
		n := min(len(ops), int(r.entries))
		if err == nil {
			err = r.batch(op, msgFlags, ops[:n])
		} else {
			for i := range ops[:n] {
				ops[i].N, ops[i].Err = 0, ErrNotSent
			}
		}
		ops = ops[n:]
	}
	return err
}

// batch makes at most r.entries operations with one io_uring_enter.
func (r *Ring) batch(op uint8, msgFlags uint32, ops []Op) error {
	if r.closed {
		for i := range ops {
			ops[i].N, ops[i].Err = 0, ErrNotSent
		}
		return ErrClosed
	}
	tail := atomic.LoadUint32(r.sqTail) // only this Ring writes it
	queued := uint32(0)
	for i := range ops {
		s := &ops[i]
		s.N, s.Err = 0, nil
		if len(s.B) == 0 {
			continue
		}
		e := &r.sqes[(tail+queued)&r.sqMask]
		*e = sqe{
			opcode:   op,
			fd:       int32(s.FD),
			addr:     uint64(uintptr(unsafe.Pointer(&s.B[0]))),
			len:      uint32(min(len(s.B), 1<<30)),
			msgFlags: msgFlags,
			userData: uint64(i),
		}
		s.Err = ErrNotSent // until its completion says otherwise
		queued++
	}
	if queued == 0 {
		return nil
	}
	atomic.StoreUint32(r.sqTail, tail+queued)
	err := r.submit(queued)
	// The entries the kernel took; the others it never saw. Only
	// io_uring_enter, which only this Ring calls, takes entries, so the
	// tail is rewound over those left: they stay ErrNotSent.
	consumed := atomic.LoadUint32(r.sqHead) - tail
	atomic.StoreUint32(r.sqTail, tail+consumed)
	done := r.reap(ops)
	if done < consumed {
		done += r.await(ops, consumed-done, r.opts.CompletionBudget)
	}
	if done < consumed {
		pending := consumed - done
		left := r.cancel(ops, consumed, pending)
		err = &StuckError{Op: opName(op), Pending: int(pending), Of: int(queued), Budget: r.opts.CompletionBudget, Kept: int(left)}
		if left > 0 {
			r.keep(ops, consumed, left)
		}
	}
	runtime.KeepAlive(ops)
	if err == nil {
		return nil
	}
	r.Close()
	return err
}

func opName(op uint8) string {
	if op == opRecv {
		return "recv"
	}
	return "send"
}

// submit submits the queued entries with io_uring_enter, as many as the
// kernel takes.
func (r *Ring) submit(queued uint32) error {
	submitted := uint32(0)
	for submitted < queued {
		n, _, errno := syscall.Syscall6(sysIOUringEnter, uintptr(r.fd), uintptr(queued-submitted), 0, 0, 0, 0)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			return fmt.Errorf("sockbatch: io_uring_enter: %w", errno)
		case n == 0:
			return errors.New("sockbatch: io_uring_enter submitted nothing")
		}
		submitted += uint32(n)
	}
	return nil
}

// await waits for the completions of pending operations of ops, at most
// budget on the Ring's clock (in the kernel, waitSlice at a time), and
// returns how many came.
func (r *Ring) await(ops []Op, pending uint32, budget time.Duration) uint32 {
	expired := r.opts.Clock.After(budget)
	done := uint32(0)
	for done < pending {
		select {
		case <-expired:
			return done
		default:
		}
		ts := syscall.NsecToTimespec(int64(waitSlice))
		arg := geteventsArg{ts: uint64(uintptr(unsafe.Pointer(&ts)))}
		_, _, errno := syscall.Syscall6(sysIOUringEnter, uintptr(r.fd), 0, uintptr(pending-done), enterGetEvents|enterExtArg,
			uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg))
		runtime.KeepAlive(&ts)
		done += r.reap(ops)
		if errno != 0 && errno != syscall.EINTR && errno != syscall.ETIME {
			return done // the ring cannot wait: what has not come is not waited for
		}
	}
	return done
}

// cancel cancels the pending operations of ops the kernel took and has not
// completed (IORING_OP_ASYNC_CANCEL, one per operation), waits at most
// Options.CancelBudget for their completions, and returns how many are
// still in the kernel.
func (r *Ring) cancel(ops []Op, consumed, pending uint32) uint32 {
	tail := atomic.LoadUint32(r.sqTail) // the submission queue is empty: batch rewound it
	n := uint32(0)
	forTaken(ops, consumed, func(i int) {
		if ops[i].Err == ErrNotSent { // taken, and no completion yet
			r.sqes[(tail+n)&r.sqMask] = sqe{opcode: opAsyncCancel, fd: -1, addr: uint64(i), userData: cancelTag | uint64(i)}
			n++
		}
	})
	atomic.StoreUint32(r.sqTail, tail+n)
	if err := r.submit(n); err != nil {
		atomic.StoreUint32(r.sqTail, atomic.LoadUint32(r.sqHead))
	}
	return pending - r.await(ops, pending, r.opts.CancelBudget)
}

// forTaken calls f with the index of each operation of ops whose entry the
// kernel took: the first consumed of those queued (entries are taken in
// the order they were queued).
func forTaken(ops []Op, consumed uint32, f func(i int)) {
	q := uint32(0)
	for i := range ops {
		if len(ops[i].B) == 0 {
			continue
		}
		if q == consumed {
			return
		}
		q++
		f(i)
	}
}

// reap takes every completion in the ring, setting its operation's result
// in ops (when ops is not nil), and returns how many operations completed
// (a cancellation's own completion is not counted).
func (r *Ring) reap(ops []Op) uint32 {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	n := uint32(0)
	for h := head; h != tail; h++ {
		c := r.cqes[h&r.cqMask]
		if c.userData&cancelTag != 0 {
			continue
		}
		n++
		if c.userData >= uint64(len(ops)) {
			continue // the keeper's: the caller has its operations back
		}
		s := &ops[c.userData]
		if c.res < 0 {
			s.N, s.Err = 0, syscall.Errno(-c.res)
		} else {
			s.N, s.Err = int(c.res), nil
		}
	}
	atomic.StoreUint32(r.cqHead, tail)
	return n
}

// keep hands the ring, and the buffers of the left operations the kernel
// took and did not give back even when cancelled, to a goroutine that
// keeps them alive until it does: closing the ring would not stop the
// kernel from reading (writing) them, and freed, their memory would be
// reused. Their Err becomes ErrStuck. It is logged once per ring (which
// is closed for its owner from here on); it should never happen, as a
// MSG_DONTWAIT operation is never left waiting in the kernel.
func (r *Ring) keep(ops []Op, consumed, left uint32) {
	kept := make([][]byte, 0, left)
	forTaken(ops, consumed, func(i int) {
		if ops[i].Err == ErrNotSent {
			ops[i].N, ops[i].Err = 0, ErrStuck
			kept = append(kept, ops[i].B)
		}
	})
	r.opts.Logger.Warn("sockbatch: io_uring operations still in the kernel after they were cancelled; "+
		"their buffers and the ring are kept (not freed) until the kernel gives them back",
		"ops", len(kept), "bytes", keptBytes(kept))
	r.kept = true
	r.held.Add(int64(left))
	keeper := *r // the keeper's from here on; Close leaves it alone
	go keeper.keepUntilGivenBack(kept, left)
}

// Kept returns how many operations of the ring's batches the kernel still
// holds after they were cancelled (see StuckError): their buffers are kept
// alive until it gives them back. It is 0 but after a StuckError with
// Kept, and falls back to 0 as the kernel completes them, also once the
// ring is closed. It is safe to call from any goroutine.
func (r *Ring) Kept() int { return int(r.held.Load()) }

func keptBytes(bufs [][]byte) int {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	return n
}

// keepUntilGivenBack waits in the kernel, keptSlice at a time, for left
// completions, holding bufs alive, then releases the ring. This wait has
// no budget on purpose: what it guards is memory the kernel may still use.
func (r *Ring) keepUntilGivenBack(bufs [][]byte, left uint32) {
	for left > 0 {
		ts := syscall.NsecToTimespec(int64(keptSlice))
		arg := geteventsArg{ts: uint64(uintptr(unsafe.Pointer(&ts)))}
		_, _, errno := syscall.Syscall6(sysIOUringEnter, uintptr(r.fd), 0, uintptr(left), enterGetEvents|enterExtArg,
			uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg))
		runtime.KeepAlive(&ts)
		n := min(left, r.reap(nil))
		left -= n
		r.held.Add(-int64(n))
		if errno != 0 && errno != syscall.EINTR && errno != syscall.ETIME {
			r.opts.Logger.Error("sockbatch: waiting for kept io_uring operations failed; their buffers stay kept", "err", errno)
			select {} // never freed: the process keeps them
		}
	}
	r.opts.Logger.Info("sockbatch: the kernel gave back the kept io_uring operations; their buffers are released", "ops", len(bufs))
	runtime.KeepAlive(bufs)
	r.release()
}

// Close unmaps the ring and closes it. Send fails with ErrClosed
// afterwards. The operations of a batch have all completed (or been
// cancelled and completed) by the time it returned, except after a
// StuckError with Kept: that ring is released by its keeper instead.
func (r *Ring) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.kept {
		return nil
	}
	return r.release()
}

// release unmaps the ring and closes it.
func (r *Ring) release() error {
	if r.sqeMem != nil {
		_ = syscall.Munmap(r.sqeMem)
		r.sqeMem, r.sqes = nil, nil
	}
	if r.ring != nil {
		_ = syscall.Munmap(r.ring)
		r.ring, r.cqes = nil, nil
	}
	return syscall.Close(r.fd)
}
