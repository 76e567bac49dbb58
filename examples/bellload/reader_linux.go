package main

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The streams' reading. A goroutine per stream blocked in a read (what an
// http.Client body costs) wakes a goroutine per stream and event, which on
// two cores shared with the bell measured the load client more than the
// bell: 330–490 ms of bellload's CPU per broadcast to 10,000 streams. Here
// a few goroutines (-readers) wait on epoll for every open stream at once
// and read each ready socket into one large buffer, so a broadcast costs a
// read system call per stream and no goroutine wake per stream.

// readBuffer is each reader's buffer: larger than any bell event of a run
// (a state of 200 notifications is ≈ 60 KB), so an event is one read.
const readBuffer = 256 << 10

// pollEvery bounds each epoll wait, so that a reader sees the run end.
const pollEvery = 50 * time.Millisecond

// maxNeedle bounds the awaited title (quoted): a stream keeps its last
// maxNeedle-1 bytes to find a title cut in two by a read.
const maxNeedle = 64

// round is one awaited notification: its title and the streams it must
// reach, streams[lo:hi] of the run.
type round struct {
	needle []byte // the title as a JSON string, quotes included
	lo, hi int
	at     []int64      // unix ns when each awaited stream had it (index-lo); written by the readers
	commit atomic.Int64 // its createdAt (unix ns), read from the first event seen; 0 until then
	left   atomic.Int64 // awaited streams not yet reached (or lost)
	lost   atomic.Int64 // awaited streams that ended before it came
	done   chan struct{}
}

func newRound(title string, lo, hi int) (*round, error) {
	needle := fmt.Appendf(nil, "%q", title)
	if len(needle) >= maxNeedle || bytes.ContainsAny(needle, `\`) {
		return nil, fmt.Errorf("title %q: at most %d plain characters", title, maxNeedle-3)
	}
	r := &round{needle: needle, lo: lo, hi: hi, at: make([]int64, hi-lo), done: make(chan struct{})}
	r.left.Store(int64(hi - lo))
	return r, nil
}

func (r *round) arrive() {
	if r.left.Add(-1) == 0 {
		close(r.done)
	}
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
	err     error // the first reader's failure
}

// newReaders starts n readers for streams (not yet open: add each once it is).
func newReaders(streams []*stream, n int) (*readers, error) {
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
		rs.wg.Add(1)
		go rs.loop(ep)
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

// close stops the readers and closes every stream.
func (rs *readers) close() {
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

func (rs *readers) failed() error {
	rs.errMu.Lock()
	defer rs.errMu.Unlock()
	return rs.err
}

func (rs *readers) loop(ep int) {
	defer rs.wg.Done()
	buf := make([]byte, readBuffer)
	events := make([]syscall.EpollEvent, 1024)
	for !rs.stop.Load() {
		n, err := syscall.EpollWait(ep, events, int(pollEvery/time.Millisecond))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			rs.errMu.Lock()
			rs.err = errors.Join(rs.err, fmt.Errorf("epoll wait: %w", err))
			rs.errMu.Unlock()
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
		for _, ev := range events[:n] {
			rs.read(ep, rs.streams[ev.Pad], woke, buf, now)
		}
	}
}

// read reads what s has, once (epoll reports it again if more is left),
// and tells the round awaited now when its title is in it. The round is
// loaded after the read, so a round begun while the batch is read is
// checked against what that read returned; its bytes came after the wake
// (woke is the round awaited then, now the wake's time), so they are timed
// at the read.
func (rs *readers) read(ep int, s *stream, woke *round, buf []byte, now int64) {
	if s.fd < 0 {
		return
	}
	n, err := syscall.Read(s.fd, buf)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
		return
	}
	r := rs.cur.Load()
	if r != woke {
		now = time.Now().UnixNano()
	}
	awaited := r != nil && s.seen != r && r.lo <= s.idx && s.idx < r.hi
	if n <= 0 { // the bell ended the stream, or it failed
		_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, s.fd, nil)
		_ = syscall.Close(s.fd)
		s.fd = -1
		rs.ended.Add(1)
		if awaited {
			s.seen = r
			r.lost.Add(1)
			r.arrive()
		}
		return
	}
	data := buf[:n]
	if awaited {
		if i, ok := s.find(data, r.needle); ok {
			s.seen = r
			r.at[s.idx-r.lo] = now
			if r.commit.Load() == 0 && i >= 0 {
				if t, ok := createdAt(data[i:]); ok {
					r.commit.CompareAndSwap(0, t)
				}
			}
			r.arrive()
		}
	}
	s.keepTail(data)
}

// find reports whether needle is in the stream's last bytes followed by
// data, and where it starts, as an index into data (negative when it
// starts in the kept tail).
func (s *stream) find(data, needle []byte) (int, bool) {
	if s.tailN > 0 {
		var joined [2 * maxNeedle]byte
		j := append(joined[:0], s.tail[:s.tailN]...)
		j = append(j, data[:min(len(data), len(needle)-1)]...)
		if i := bytes.Index(j, needle); i >= 0 {
			return i - s.tailN, true
		}
	}
	i := bytes.Index(data, needle)
	return i, i >= 0
}

// keepTail keeps the last bytes the stream read, for find.
func (s *stream) keepTail(data []byte) {
	if len(data) >= len(s.tail) {
		s.tailN = copy(s.tail[:], data[len(data)-len(s.tail):])
		return
	}
	keep := min(s.tailN, len(s.tail)-len(data))
	copy(s.tail[:], s.tail[s.tailN-keep:s.tailN])
	s.tailN = keep + copy(s.tail[keep:], data)
}

// createdAt reads the createdAt of the notification whose title starts
// item (the bell's JSON of a notification has it after the title).
func createdAt(item []byte) (int64, bool) {
	const key = `"createdAt":"`
	i := bytes.Index(item, []byte(key))
	if i < 0 || bytes.IndexByte(item[:i], '}') >= 0 { // not this notification's
		return 0, false
	}
	rest := item[i+len(key):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:end]))
	if err != nil {
		return 0, false
	}
	return t.UnixNano(), true
}
