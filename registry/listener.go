package registry

import (
	"net"
	"sync"
)

// DefaultMaxConnections is how many connections a registry serves at once
// when its operator does not say (examples/registry -max-conns). Each costs
// a file descriptor: the cap keeps idle or slow clients, authenticated or
// not, from exhausting the process's descriptors while the HTTP server's
// ReadHeaderTimeout and IdleTimeout close them.
const DefaultMaxConnections = 1024

// LimitListener returns a listener that holds at most max connections open
// at once: Accept waits while max are open (a waiting client stays in the
// kernel's backlog, costing the process nothing) and a connection's Close
// frees its slot. max <= 0 means DefaultMaxConnections.
func LimitListener(l net.Listener, max int) net.Listener {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	return &limitListener{Listener: l, slots: make(chan struct{}, max), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots chan struct{} // one token per open connection
	once  sync.Once
	done  chan struct{} // closed by Close: a waiting Accept returns
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn frees its listener slot once, at its first Close.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
