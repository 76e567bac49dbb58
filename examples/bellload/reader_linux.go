package main

import (
	"errors"
	"fmt"
	"strings"
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
	own := !strings.EqualFold(r.addressee, adminAddressee)
	if it.Message != r.message || !strings.EqualFold(it.Addressee, r.addressee) || it.Own != own ||
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

// add hands s, open, to its reader.
func (rs *readers) add(s *stream) error {
	ep := rs.eps[s.idx%len(rs.eps)]
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(s.fd), Pad: int32(s.idx)}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, s.fd, &ev); err != nil {
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
// than that takes more than one read: epoll reports its socket again).
const (
	recvBatch = 1024
	recvChunk = 8 << 10
)

func (rs *readers) loop(ep int, ring *sockbatch.Ring) {
	defer rs.wg.Done()
	var bufs []byte
	var ops []sockbatch.Op
	var batched []*stream
	if ring != nil {
		defer ring.Close()
		bufs = make([]byte, recvBatch*recvChunk)
	}
	buf := make([]byte, readBuffer)
	events := make([]syscall.EpollEvent, recvBatch)
	cache := new(bellstate.Cache) // this reader's: its streams share the decoding of their events
	for !rs.stop.Load() {
		n, err := syscall.EpollWait(ep, events, int(pollEvery/time.Millisecond))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			rs.fail(fmt.Errorf("epoll wait: %w", err))
			return
		}
		if n == 0 {
			continue
		}
		// Every socket reported had its bytes by now: the time of
		// arrival for each, however long the batch takes to read (of the
		// round awaited at the wake: see read).
		now := time.Now().UnixNano()
		woke := rs.cur.Load()
		if ring == nil {
			for _, ev := range events[:n] {
				rs.read(ep, rs.streams[ev.Pad], woke, buf, now, cache)
			}
		} else {
			ops, batched = ops[:0], batched[:0]
			for i, ev := range events[:n] {
				if s := rs.streams[ev.Pad]; s.fd >= 0 {
					ops = append(ops, sockbatch.Op{FD: s.fd, B: bufs[i*recvChunk : (i+1)*recvChunk]})
					batched = append(batched, s)
				}
			}
			if err := ring.Recv(ops); err != nil {
				rs.fail(fmt.Errorf("reading in io_uring batches: %w", err))
				return
			}
			for i, op := range ops {
				rs.handle(ep, batched[i], woke, op.B, op.N, op.Err, now, cache)
			}
		}
		if n < fewReady {
			time.Sleep(batchPause) // not a wait for anything: see batchPause
		}
	}
}

// read reads what s has, once (epoll reports it again if more is left),
// applies the events it completes to the stream's state, and tells the
// round awaited now when the state holds its notification as sent. The
// round is loaded after the read, so a round begun while the batch is read
// is checked against what that read returned; its bytes came after the
// wake (woke is the round awaited then, now the wake's time), so they are
// timed at the read. A stream whose events do not apply is closed and the
// run fails.
func (rs *readers) read(ep int, s *stream, woke *round, buf []byte, now int64, cache *bellstate.Cache) {
	if s.fd < 0 {
		return
	}
	n, err := syscall.Read(s.fd, buf)
	rs.handle(ep, s, woke, buf, n, err, now, cache)
}

// handle is read's work once s's socket was read: n bytes into buf, or err.
func (rs *readers) handle(ep int, s *stream, woke *round, buf []byte, n int, err error, now int64, cache *bellstate.Cache) {
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
		return
	}
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
