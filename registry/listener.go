package registry

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// SilentConnectionGrace is how long a new connection may hold a slot of a
// full LimitConnections cap without sending a byte before it may be closed
// for a new client: clients that connect and say nothing cannot keep the
// cap full until the server's ReadHeaderTimeout. (One that trickles its
// headers is bounded by ReadHeaderTimeout alone.)
const SilentConnectionGrace = time.Second

// DefaultMaxConnections is how many connections a registry serves at once
// when its operator does not say (examples/registry -max-conns). Each costs
// a file descriptor: the cap keeps idle or slow clients, authenticated or
// not, from exhausting the process's descriptors while the HTTP server's
// ReadHeaderTimeout and IdleTimeout close them.
const DefaultMaxConnections = 1024

// LimitConnections returns ln limited to max open connections (max <= 0
// means DefaultMaxConnections) for srv, and sets srv.ConnState (keeping any
// hook already there) so that the limit knows which connections are idle
// keep-alive connections between requests. An idle connection never holds
// a slot a new client needs: when every slot is taken, the oldest idle
// connection is closed to free one (a client's HTTP library reconnects, as
// it does after an IdleTimeout); with none idle, the oldest connection that
// has sent nothing within SilentConnectionGrace is.
// Only connections serving a request (or new within the grace) make new
// clients wait, in the kernel's backlog. Serve srv on the returned
// listener.
func LimitConnections(srv *http.Server, ln net.Listener, max int) net.Listener {
	l := newLimitListener(ln, max)
	next := srv.ConnState
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		l.connState(c, st)
		if next != nil {
			next(c, st)
		}
	}
	return l
}

// LimitListener returns a listener that holds at most max connections open
// at once: Accept waits while max are open (a waiting client stays in the
// kernel's backlog, costing the process nothing) and a connection's Close
// frees its slot. max <= 0 means DefaultMaxConnections. Without the HTTP
// server's connection states it cannot tell an idle keep-alive connection
// from a busy one, so idle ones hold their slots until the server's
// IdleTimeout: use LimitConnections for an http.Server.
func LimitListener(l net.Listener, max int) net.Listener { return newLimitListener(l, max) }

func newLimitListener(l net.Listener, max int) *limitListener {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	return &limitListener{Listener: l, slots: make(chan struct{}, max), done: make(chan struct{}),
		wake: make(chan struct{}, 1), idle: map[*limitedConn]uint64{}, silent: map[*limitedConn]time.Time{}}
}

type limitListener struct {
	net.Listener
	slots chan struct{} // one token per open connection
	once  sync.Once
	done  chan struct{} // closed by Close: a waiting Accept returns
	wake  chan struct{} // told when a connection goes idle: a waiting Accept may take its slot

	mu     sync.Mutex
	idle   map[*limitedConn]uint64    // idle keep-alive connections → when they went idle (a sequence number)
	silent map[*limitedConn]time.Time // new connections without a complete request header → when accepted
	ticks  uint64
}

// Accept takes a slot for the next connection, then accepts it. When every
// slot is taken, an idle connection gives its slot up (the one idle
// longest) rather than make a new client wait for the server's
// IdleTimeout; with none idle, Accept waits until a connection closes or
// goes idle.
func (l *limitListener) Accept() (net.Conn, error) {
	for taken := false; !taken; {
		select {
		case l.slots <- struct{}{}:
			taken = true
			continue
		default:
		}
		l.closeOldestIdle()
		var recheck <-chan time.Time
		var timer *time.Timer
		if l.silentCount() > 0 {
			// A silent connection may pass its grace while we wait.
			timer = time.NewTimer(SilentConnectionGrace / 4)
			recheck = timer.C
		}
		closed := false
		select {
		case l.slots <- struct{}{}:
			taken = true
		case <-l.wake:
		case <-recheck:
		case <-l.done:
			closed = true
		}
		if timer != nil {
			timer.Stop()
		}
		if closed {
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	lc := &limitedConn{Conn: c}
	lc.release = func() {
		l.mu.Lock()
		delete(l.idle, lc)
		delete(l.silent, lc)
		l.mu.Unlock()
		<-l.slots
	}
	return lc, nil
}

// closeOldestIdle closes the connection that has been idle longest, or
// with none idle the oldest silent one past its grace, if any; its Close
// frees its slot.
func (l *limitListener) closeOldestIdle() {
	l.mu.Lock()
	var oldest *limitedConn
	var at uint64
	for c, t := range l.idle {
		if oldest == nil || t < at {
			oldest, at = c, t
		}
	}
	if oldest == nil {
		var since time.Time
		for c, t := range l.silent {
			if time.Since(t) >= SilentConnectionGrace && (oldest == nil || t.Before(since)) {
				oldest, since = c, t
			}
		}
	}
	delete(l.idle, oldest)
	delete(l.silent, oldest)
	l.mu.Unlock()
	if oldest != nil {
		_ = oldest.Close()
	}
}

func (l *limitListener) silentCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.silent)
}

// connState records which connections are idle between requests.
func (l *limitListener) connState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateNew:
		if !lc.isClosed() {
			l.silent[lc] = time.Now()
		}
	case http.StateIdle:
		delete(l.silent, lc)
		if !lc.isClosed() {
			l.ticks++
			l.idle[lc] = l.ticks
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	default:
		delete(l.idle, lc)
		delete(l.silent, lc)
	}
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn frees its listener slot once, at its first Close.
type limitedConn struct {
	net.Conn
	once    sync.Once
	closed  sync.Mutex
	gone    bool
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.closed.Lock()
	c.gone = true
	c.closed.Unlock()
	c.once.Do(c.release)
	return err
}

// SyscallConn gives the connection's descriptor when the connection it
// wraps has one (a *net.TCPConn does), so that a server that took it over
// from net/http can write to it without waiting (examples/bell's streams).
func (c *limitedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

func (c *limitedConn) isClosed() bool {
	c.closed.Lock()
	defer c.closed.Unlock()
	return c.gone
}
