package main

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/meshrx/meshrx/examples/bell/bellstate"
	"github.com/meshrx/meshrx/internal/sockbatch"
)

// The streams' reading. A goroutine per stream blocked in a read (what an
// http.Client body costs) wakes a goroutine per stream and event, which on
// two cores shared with the bell measured the load client more than the
// bell: 330–490 ms of bellload's CPU per broadcast to 10,000 streams. Here
// a few goroutines (-readers) wait on epoll for every open stream at once
// and read each ready socket into one large buffer, so a broadcast costs a
// read system call per stream and no goroutine wake per stream — or, where
// io_uring is available (and not -read-each), one system call per batch of
// ready sockets (internal/sockbatch: one IORING_OP_RECV each, with
// MSG_DONTWAIT, so each is exactly a non-blocking read), each read into
// its own 8 KiB of the reader's batch buffer.
//
// Each stream's events are applied as a client applies them
// (bellstate.State: the whole state, then changes in order, each checked
// against the size and unread count it names), so a lost, doubled or
// reordered event fails the run; and an awaited notification counts as
// arrived once the stream's state holds it with the content it was sent
// with.

// readBuffer is each reader's buffer: larger than any bell event of a run
// (a state of 200 notifications is ≈ 60 KB), so an event is one read.
const readBuffer = 256 << 10

// pollEvery bounds each epoll wait, so that a reader sees the run end.
const pollEvery = 50 * time.Millisecond

// batchPause is how long a reader lets the bytes of a fan-out gather
// after a wait that returned few ready streams, before it waits again.
// Without it, a reader that keeps up with the bell sleeps in epoll_wait
// after every few sockets and each of the bell's writes wakes it: a
// wake-up per stream, paid by the bell's write (the wake of the reader's
// thread is inside its system call on loopback) and by bellload's
// context switches, on the two cores both share. A browser reading one
// stream on another machine costs the bell no such thing. The pause is
// ≈ 1 ms, not 0.5: the runtime's netpoll rounds a sub-millisecond wait up
// to 1 ms (time.Sleep(500µs) measured p50 1.15 ms). Bytes arriving in the
// pause are timed at the next wait's return, later than they came, never
// earlier; but the pause also lowers the bell's CPU contention, and with
// it the figures.
const batchPause = 500 * time.Microsecond

// fewReady is a wait's return below which the reader pauses.
const fewReady = 64

// epollET is EPOLLET as epoll_event's uint32 (syscall's is a negative int).
const epollET = 1 << 31

// round is one awaited notification: its title, what it was sent with,
// and the streams it must reach, streams[lo:hi] of the run.
type round struct {
	title     string
	addressee string // the recipient: a viewer, or Admin
	message   string
	at        []int64 // unix ns when each awaited stream had it (index-lo); written by the readers
	lo, hi    int
	commit    atomic.Int64 // its createdAt (unix ns), from the first stream that had it; 0 until then
	left      atomic.Int64 // awaited streams not yet reached (or lost)
	lost      atomic.Int64 // awaited streams that ended before it came
	done      chan struct{}
}

func newRound(title, addressee, message string, lo, hi int) *round {
	r := &round{title: title, addressee: addressee, message: message, lo: lo, hi: hi, at: make([]int64, hi-lo), done: make(chan struct{})}
	r.left.Store(int64(hi - lo))
	return r
}

func (r *round) arrive() {
	if r.left.Add(-1) == 0 {
		close(r.done)
	}
}

// check reports how it, a stream's notification titled as r's, differs
// from what r sent to viewer.
func (r *round) check(it *bellstate.Item, viewer string) error {
	own := !bellstate.EqualNames(r.addressee, adminAddressee)
	if it.Message != r.message || !bellstate.EqualNames(it.Addressee, r.addressee) || it.Own != own ||
		it.Type != "General" || it.CreatedBy != senderName || it.IsRead || it.CreatedAt.IsZero() {
		return fmt.Errorf("stream of %s: %q arrived as %+v, not as sent (to %s, message %q, by %s, unread)",
			viewer, r.title, *it, r.addressee, r.message, senderName)
	}
	return nil
}

// readers read every open stream through epoll.
type readers struct {
	streams []*stream
	eps     []int // one epoll instance per reader
	cur     atomic.Pointer[round]
	ended   atomic.Int64 // streams the bell ended
	stop    atomic.Bool
	wg      sync.WaitGroup
	errMu   sync.Mutex
	err     error // the readers' failures
	once    sync.Once
}

// newReaders starts n readers for streams (not yet open: add each once it is);
// batch has each read the sockets epoll reports ready in io_uring batches
// (one system call for all of them, see internal/sockbatch) where io_uring
// is available, rather than with a read(2) each.
func newReaders(streams []*stream, n int, batch bool) (*readers, error) {
	if n < 1 {
		return nil, errors.New("at least one reader")
	}
	rs := &readers{streams: streams}
	for range n {
		ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			rs.close()
			return nil, fmt.Errorf("epoll: %w", err)
		}
		rs.eps = append(rs.eps, ep)
	}
	for _, ep := range rs.eps {
		var ring *sockbatch.Ring
		if batch {
			ring, _ = sockbatch.New(recvBatch, sockbatch.Options{}) // nil where unavailable: a read per stream
		}
		rs.wg.Add(1)
		go rs.loop(ep, ring)
	}
	return rs, nil
}

// add hands s, open on fd (s.fd: passed by its opener, as the reader may
// close it at once), to its reader.
func (rs *readers) add(s *stream, fd int) error {
	ep := rs.eps[s.idx%len(rs.eps)]
	// Edge-triggered: a socket is reported once per arrival, not again at
	// every wait until read (see loop: a read that fills its buffer is
	// read again without waiting).
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET, Fd: int32(fd), Pad: int32(s.idx)}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll add of %s's stream: %w", s.viewer, err)
	}
	return nil
}

// close stops the readers and closes every stream, once.
func (rs *readers) close() { rs.once.Do(rs.closeOnce) }

func (rs *readers) closeOnce() {
	rs.stop.Store(true)
	rs.wg.Wait()
	for _, s := range rs.streams {
		if s.fd >= 0 {
			_ = syscall.Close(s.fd)
			s.fd = -1
		}
	}
	for _, ep := range rs.eps {
		_ = syscall.Close(ep)
	}
}

// fail records a reader's failure.
func (rs *readers) fail(err error) {
	rs.errMu.Lock()
	rs.err = errors.Join(rs.err, err)
	rs.errMu.Unlock()
}

func (rs *readers) failed() error {
	rs.errMu.Lock()
	defer rs.errMu.Unlock()
	return rs.err
}

// recvBatch and recvChunk: a batch of reads is at most recvBatch sockets,
// each read into a recvChunk of the reader's batch buffer (an event larger
// than that takes more than one read: the reader reads its socket again,
// as epoll, edge-triggered, will not report it; see loop).
const (
	recvBatch = 1024
	recvChunk = 8 << 10
)

func (rs *readers) loop(ep int, ring *sockbatch.Ring) {
	defer rs.wg.Done()
	var bufs []byte
	var ops []sockbatch.Op
	if ring != nil {
		defer ring.Close()
		bufs = make([]byte, recvBatch*recvChunk)
	}
	buf := make([]byte, readBuffer)
	events := make([]syscall.EpollEvent, recvBatch)
	cache := new(bellstate.Cache) // this reader's: its streams share the decoding of their events
	// The sockets are edge-triggered (see add): epoll reports a socket
	// once per arrival, and a read that filled its buffer may have left
	// bytes no later arrival reports; so may a read of a socket whose
	// peer had closed (or reset) it by then, its end left for the next
	// read. Those streams (again) are read in the next batch without
	// waiting for epoll, the ending ones until their end is read; each is
	// read once a batch (turn marks the batch a stream was taken into).
	var again, ready []*stream
	var turn uint64
	for !rs.stop.Load() {
		wait := int(pollEvery / time.Millisecond)
		if len(again) > 0 {
			wait = 0
		}
		n, err := syscall.EpollWait(ep, events[:recvBatch-min(len(again), recvBatch/2)], wait)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			rs.fail(fmt.Errorf("epoll wait: %w", err))
			return
		}
		// Every socket reported had its bytes by now: the time of
		// arrival for each, however long the batch takes to read (of the
		// round awaited at the wake: see read).
		now := time.Now().UnixNano()
		woke := rs.cur.Load()
		turn++
		ready = ready[:0]
		for len(again) > 0 && len(ready) < recvBatch/2 {
			s := again[len(again)-1]
			again = again[:len(again)-1]
			if s.fd >= 0 && s.turn != turn {
				s.turn = turn
				ready = append(ready, s)
			}
		}
		for _, ev := range events[:n] {
			s := rs.streams[ev.Pad]
			if ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
				s.ending = true
			}
			if s.fd >= 0 && s.turn != turn {
				s.turn = turn
				ready = append(ready, s)
			}
		}
		if len(ready) == 0 {
			continue
		}
		if ring == nil {
			for _, s := range ready {
				if rs.read(ep, s, woke, buf, now, cache) {
					again = append(again, s)
				}
			}
		} else {
			ops = ops[:0]
			for i, s := range ready {
				ops = append(ops, sockbatch.Op{FD: s.fd, B: bufs[i*recvChunk : (i+1)*recvChunk]})
			}
			if err := ring.Recv(ops); err != nil {
				rs.fail(fmt.Errorf("reading in io_uring batches: %w", err))
				return
			}
			for i, op := range ops {
				if rs.handle(ep, ready[i], woke, op.B, op.N, op.Err, now, cache) {
					again = append(again, ready[i])
				}
			}
		}
		if len(ready) < fewReady && len(again) == 0 {
			time.Sleep(batchPause) // not a wait for anything: see batchPause
		}
	}
}

// read reads what s has, once (the loop reads it again when it reports
// more may be left), applies the events it completes to the stream's
// state, and tells the round awaited now when the state holds its
// notification as sent. The round is loaded after the read, so a round
// begun while the batch is read is checked against what that read
// returned; its bytes came after the wake (woke is the round awaited then,
// now the wake's time), so they are timed at the read. A stream whose
// events do not apply is closed and the run fails.
//
// It reports whether the socket may hold more, which its edge-triggered
// registration will not report again (see loop): the read filled buf, or
// epoll reported the stream's end, which a read shows only once it got
// every byte before it.
func (rs *readers) read(ep int, s *stream, woke *round, buf []byte, now int64, cache *bellstate.Cache) (more bool) {
	if s.fd < 0 {
		return false
	}
	n, err := syscall.Read(s.fd, buf)
	return rs.handle(ep, s, woke, buf, n, err, now, cache)
}

// handle is read's work once s's socket was read: n bytes into buf, or
// err. It reports whether the socket may hold more (see read).
func (rs *readers) handle(ep int, s *stream, woke *round, buf []byte, n int, err error, now int64, cache *bellstate.Cache) (more bool) {
	if errors.Is(err, syscall.EINTR) {
		return true // not read: read it again
	}
	if errors.Is(err, syscall.EAGAIN) {
		return false
	}
	more = n == len(buf) || s.ending
	r := rs.cur.Load()
	if r != woke {
		now = time.Now().UnixNano()
	}
	awaited := r != nil && s.seen != r && r.lo <= s.idx && s.idx < r.hi
	if n > 0 {
		err = s.feed(buf[:n], cache)
	}
	if n <= 0 || err != nil { // the bell ended the stream, it failed, or its events did not apply
		_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, s.fd, nil)
		_ = syscall.Close(s.fd)
		s.fd = -1
		rs.ended.Add(1)
		if err != nil {
			rs.fail(err)
		}
		if awaited {
			s.seen = r
			r.lost.Add(1)
			r.arrive()
		}
		return
	}
	if !awaited {
		return
	}
	// The awaited notification: among those the read's last event put
	// (an awaited stream's one event of the round), else anywhere.
	var it *bellstate.Item
	for _, p := range s.state.Put() {
		if p.Title == r.title {
			it = p
			break
		}
	}
	if it == nil {
		if it = s.state.Find(r.title); it == nil {
			return
		}
	}
	if err := r.check(it, s.viewer); err != nil {
		rs.fail(err)
	}
	s.seen = r
	r.at[s.idx-r.lo] = now
	r.commit.CompareAndSwap(0, it.CreatedAt.UnixNano())
	r.arrive()
	return more
}

// feed applies the events data completes to s's state.
func (s *stream) feed(data []byte, cache *bellstate.Cache) error {
	return s.split.Feed(data, func(ev bellstate.Event) error {
		if err := s.state.Apply(ev, cache); err != nil {
			return fmt.Errorf("stream of %s: %w", s.viewer, err)
		}
		return nil
	})
}
