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

	opSend = 26 // IORING_OP_SEND
	opRecv = 27 // IORING_OP_RECV

	msgDontWait = 0x40   // MSG_DONTWAIT: a full socket fails the send with EAGAIN, never queues it
	msgNoSignal = 0x4000 // MSG_NOSIGNAL: EPIPE, not SIGPIPE
)

// completionWait bounds the wait for a batch's completions once it is
// submitted. A MSG_DONTWAIT send completes while it is submitted, so the
// wait is normally not entered at all.
const completionWait = time.Second

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

	closed bool
	stuck  [][]byte // buffers of sends still in the kernel when the ring failed: kept alive
}

// New sets up a ring for batches of up to entries sends each (larger
// batches are submitted entries at a time). It fails with an error
// wrapping errors.ErrUnsupported when io_uring is unavailable here.
func New(entries int) (*Ring, error) {
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
	r := &Ring{fd: int(fd), entries: p.sqEntries}
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
// closed): the sends it did not make have Err ErrNotSent, and any whose
// completion did not come in time ErrStuck.
func (r *Ring) Send(sends []Op) error { return r.do(opSend, sends) }

// Recv makes every read of ops once, without waiting, as Send makes sends.
func (r *Ring) Recv(ops []Op) error { return r.do(opRecv, ops) }

func (r *Ring) do(op uint8, sends []Op) error {
	var err error
	for len(sends) > 0 {
		n := min(len(sends), int(r.entries))
		if err == nil {
			err = r.batch(op, sends[:n])
		} else {
			for i := range sends[:n] {
				sends[i].N, sends[i].Err = 0, ErrNotSent
			}
		}
		sends = sends[n:]
	}
	return err
}

// batch makes at most r.entries sends with one io_uring_enter.
func (r *Ring) batch(op uint8, sends []Op) error {
	if r.closed {
		for i := range sends {
			sends[i].N, sends[i].Err = 0, ErrNotSent
		}
		return ErrClosed
	}
	tail := atomic.LoadUint32(r.sqTail) // only this Ring writes it
	queued := uint32(0)
	for i := range sends {
		s := &sends[i]
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
			msgFlags: msgDontWait | msgNoSignal,
			userData: uint64(i),
		}
		s.Err = ErrNotSent // until its completion says otherwise
		queued++
	}
	if queued == 0 {
		return nil
	}
	atomic.StoreUint32(r.sqTail, tail+queued)
	done, err := r.submitAndReap(sends, queued)
	runtime.KeepAlive(sends)
	if err == nil {
		return nil
	}
	// The kernel took entries it has not completed: their buffers stay
	// referenced (the caller must not be able to reuse memory the kernel
	// may still read), and the ring is closed, which cancels them.
	if consumed := atomic.LoadUint32(r.sqHead) - tail; done < consumed {
		q := uint32(0) // entries are consumed in the order they were queued
		for i := range sends {
			if len(sends[i].B) == 0 {
				continue
			}
			if q < consumed && sends[i].Err == ErrNotSent {
				sends[i].Err = ErrStuck
				r.stuck = append(r.stuck, sends[i].B)
			}
			q++
		}
	}
	r.Close()
	return err
}

// submitAndReap submits queued entries and reaps their completions,
// waiting at most completionWait for any not done while they were
// submitted. It returns how many completed.
func (r *Ring) submitAndReap(sends []Op, queued uint32) (uint32, error) {
	submitted := uint32(0)
	for submitted < queued {
		n, _, errno := syscall.Syscall6(sysIOUringEnter, uintptr(r.fd), uintptr(queued-submitted), 0, 0, 0, 0)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			done := r.reap(sends)
			return done, fmt.Errorf("sockbatch: io_uring_enter: %w", errno)
		case n == 0:
			done := r.reap(sends)
			return done, errors.New("sockbatch: io_uring_enter submitted nothing")
		}
		submitted += uint32(n)
	}
	done := r.reap(sends)
	if done == queued {
		return done, nil
	}
	deadline := time.Now().Add(completionWait)
	for done < queued {
		left := time.Until(deadline)
		if left <= 0 {
			return done, fmt.Errorf("sockbatch: %d of %d operations not completed within %v", queued-done, queued, completionWait)
		}
		ts := syscall.NsecToTimespec(int64(left))
		arg := geteventsArg{ts: uint64(uintptr(unsafe.Pointer(&ts)))}
		_, _, errno := syscall.Syscall6(sysIOUringEnter, uintptr(r.fd), 0, uintptr(queued-done), enterGetEvents|enterExtArg,
			uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg))
		runtime.KeepAlive(&ts)
		done += r.reap(sends)
		if errno != 0 && errno != syscall.EINTR && errno != syscall.ETIME {
			return done, fmt.Errorf("sockbatch: io_uring_enter (waiting): %w", errno)
		}
	}
	return done, nil
}

// reap takes every completion in the ring, setting its send's result, and
// returns how many it took.
func (r *Ring) reap(sends []Op) uint32 {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for h := head; h != tail; h++ {
		c := r.cqes[h&r.cqMask]
		if c.userData >= uint64(len(sends)) {
			continue // cannot happen: every entry's user data is its index
		}
		s := &sends[c.userData]
		if c.res < 0 {
			s.N, s.Err = 0, syscall.Errno(-c.res)
		} else {
			s.N, s.Err = int(c.res), nil
		}
	}
	atomic.StoreUint32(r.cqHead, tail)
	return tail - head
}

// Close unmaps the ring and closes it; a send still in the kernel is
// cancelled. Send fails with ErrClosed afterwards.
func (r *Ring) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
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
