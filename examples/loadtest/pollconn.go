package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// The pollers speak HTTP/1.1 themselves, over connections they keep, as
// load generators do (wrk, h2load): a load generator must cost less than
// the server it measures. With net/http's client (a transport's two
// goroutines per connection and channel hand-offs, a Request, its header
// map and a response per poll, a client trace) the pollers' process used
// more CPU per poll than the registry (8-9 s against 7 s for 51,200 polls)
// and its own p99 before the request was written was 3.6-4.7 ms. A poll
// here writes a request built when the poller's ETag last changed and
// reads the answer through the connection's fixed buffer: the status, the
// ETag, and the body to its end by Content-Length or chunks, which it
// counts. What it verifies is what the net/http poller verified: the
// status (200 or 304, else an error) and the ETag it keeps.

// pollReadBuffer is each connection's read buffer: a status line or a
// header line longer than this is an error.
const pollReadBuffer = 8 << 10

// pollTarget is the index URL taken apart for the requests.
type pollTarget struct {
	addr, host string // dial address; Host header
	path       string // the request target, query included
}

func parsePollTarget(raw string) (pollTarget, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return pollTarget{}, fmt.Errorf("the index URL %q: %w", raw, err)
	}
	if u.Scheme != "http" || u.Host == "" || u.User != nil || u.Fragment != "" {
		return pollTarget{}, fmt.Errorf("the index URL %q: the pollers speak plain HTTP/1.1: want http://host[:port]/path", raw)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return pollTarget{addr: addr, host: u.Host, path: u.RequestURI()}, nil
}

// request builds a GET of the target with the path's query extended by
// query ("" none) and the given If-None-Match ("" none).
func (t pollTarget) request(key, query, ifNoneMatch string) []byte {
	var b bytes.Buffer
	b.WriteString("GET ")
	b.WriteString(t.path)
	if query != "" {
		if strings.Contains(t.path, "?") {
			b.WriteByte('&')
		} else {
			b.WriteByte('?')
		}
		b.WriteString(query)
	}
	b.WriteString(" HTTP/1.1\r\nHost: ")
	b.WriteString(t.host)
	b.WriteString("\r\nUser-Agent: meshrx-loadtest\r\nAuthorization: Bearer ")
	b.WriteString(key)
	if ifNoneMatch != "" {
		b.WriteString("\r\nIf-None-Match: ")
		b.WriteString(ifNoneMatch)
	}
	b.WriteString("\r\n\r\n")
	return b.Bytes()
}

// pollConns is one poller's connections: at most max requests at once
// (a poll waiting for a slot counts the wait), each on a kept connection,
// the most recently used first (as net/http's idle pool), dialled when
// none is idle. The end of ctx (the run's cut-off) closes every one, so a
// request still running then returns.
type pollConns struct {
	ctx    context.Context
	target pollTarget
	dialer net.Dialer
	slots  chan struct{}
	mu     sync.Mutex
	idle   []*pollConn
}

func newPollConns(ctx context.Context, target pollTarget, max int) *pollConns {
	return &pollConns{ctx: ctx, target: target, slots: make(chan struct{}, max)}
}

// pollConn is one kept connection and its read buffer.
type pollConn struct {
	c    net.Conn
	r    *bufio.Reader
	stop func() bool // unregisters the close at the cut-off
}

func (c *pollConn) close() {
	c.stop()
	_ = c.c.Close()
}

// pollAnswer is what a poll read.
type pollAnswer struct {
	status int
	etag   string
	bytes  int64 // body bytes
}

// roundTrip writes req on a kept connection (or a new one) and reads the
// answer; written is called once the request is written. A kept
// connection that fails before any byte of the answer arrives (the server
// closed it while idle) is closed and the request retried once on a
// newly dialled one, as net/http does for a GET: not on the next idle
// one, which the server may have closed too. knownTag is the ETag the
// poller holds: an answer carrying the same one reuses its string.
func (p *pollConns) roundTrip(req []byte, knownTag string, written func()) (pollAnswer, error) {
	select {
	case p.slots <- struct{}{}:
	case <-p.ctx.Done():
		return pollAnswer{}, p.ctx.Err()
	}
	defer func() { <-p.slots }()
	c, reused, err := p.get()
	if err != nil {
		return pollAnswer{}, err
	}
	a, keep, started, err := c.exchange(req, knownTag, written)
	if err != nil && reused && !started && p.ctx.Err() == nil {
		c.close()
		if c, err = p.dial(); err != nil {
			return pollAnswer{}, err
		}
		a, keep, _, err = c.exchange(req, knownTag, written)
	}
	// Bytes already buffered past the answer answer no request (net/http
	// closes such a connection too): kept, they would be read as the next
	// poll's answer. Buffered is a count, not a read.
	if err == nil && keep && c.r.Buffered() == 0 {
		p.put(c)
	} else {
		c.close()
	}
	return a, err
}

func (p *pollConns) get() (c *pollConn, reused bool, err error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c = p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, true, nil
	}
	p.mu.Unlock()
	c, err = p.dial()
	return c, false, err
}

// dial opens a new connection.
func (p *pollConns) dial() (*pollConn, error) {
	// The dial ends with ctx but not at its deadline, which is on the
	// run's clock (virtual in tests), not the network's.
	dctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(p.ctx, cancel)
	nc, err := p.dialer.DialContext(dctx, "tcp", p.target.addr)
	stop()
	cancel()
	if err != nil {
		return nil, err
	}
	c := &pollConn{c: nc, r: bufio.NewReaderSize(nc, pollReadBuffer)}
	c.stop = context.AfterFunc(p.ctx, func() { _ = nc.Close() })
	return c, nil
}

func (p *pollConns) put(c *pollConn) {
	p.mu.Lock()
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// closeIdle closes the connections not in use.
func (p *pollConns) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

var errMalformed = errors.New("malformed HTTP answer")

// exchange writes req and reads one answer. started: a byte of the
// answer arrived; keep: the connection may carry the next request.
func (c *pollConn) exchange(req []byte, knownTag string, written func()) (a pollAnswer, keep, started bool, err error) {
	if _, err := c.c.Write(req); err != nil {
		return a, false, false, err
	}
	written()
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return a, false, len(line) > 0, fmt.Errorf("reading the status line: %w", err)
	}
	started = true
	for {
		// "HTTP/1.1 304 Not Modified"
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return a, false, true, fmt.Errorf("%w: status line %q", errMalformed, line)
		}
		a.status = 0
		for _, d := range line[9:12] {
			if d < '0' || d > '9' {
				return a, false, true, fmt.Errorf("%w: status line %q", errMalformed, line)
			}
			a.status = a.status*10 + int(d-'0')
		}
		keep = line[7] == '1'
		length, chunked := int64(-1), false
		for {
			h, err := c.r.ReadSlice('\n')
			if err != nil {
				return a, false, true, fmt.Errorf("reading the header: %w", err)
			}
			h = bytes.TrimRight(h, "\r\n")
			if len(h) == 0 {
				break
			}
			name, value, ok := bytes.Cut(h, []byte(":"))
			if !ok {
				return a, false, true, fmt.Errorf("%w: header line %q", errMalformed, h)
			}
			value = bytes.TrimSpace(value)
			if !isHeaderName(name) {
				return a, false, true, fmt.Errorf("%w: header name %q", errMalformed, name)
			}
			switch {
			case equalToken(name, "Content-Length"):
				n, err := strconv.ParseInt(string(value), 10, 64)
				if err != nil || n < 0 {
					return a, false, true, fmt.Errorf("%w: Content-Length %q", errMalformed, value)
				}
				// Two different lengths cannot frame the body (net/http
				// refuses them too); the same one repeated can.
				if length >= 0 && n != length {
					return a, false, true, fmt.Errorf("%w: Content-Length %d and %d", errMalformed, length, n)
				}
				length = n
			case equalToken(name, "Transfer-Encoding"):
				chunked = equalToken(value, "chunked")
				if !chunked {
					return a, false, true, fmt.Errorf("%w: Transfer-Encoding %q", errMalformed, value)
				}
			case equalToken(name, "ETag"):
				if string(value) == knownTag {
					a.etag = knownTag
				} else {
					a.etag = string(value)
				}
			case equalToken(name, "Connection"):
				if equalToken(value, "close") {
					keep = false
				}
			}
		}
		switch {
		case a.status >= 100 && a.status < 200:
			// An interim answer: the real one follows.
			if line, err = c.r.ReadSlice('\n'); err != nil {
				return a, false, true, fmt.Errorf("reading the status line: %w", err)
			}
			a.etag = ""
			continue
		case a.status == 204 || a.status == 304:
			return a, keep, true, nil
		case chunked:
			a.bytes, err = c.discardChunks()
			return a, keep && err == nil, true, err
		case length >= 0:
			n, err := c.r.Discard(int(length))
			a.bytes = int64(n)
			return a, keep && err == nil, true, err
		default:
			// The body runs to the connection's end.
			n, err := io.Copy(io.Discard, c.r)
			a.bytes = n
			return a, false, true, err
		}
	}
}

// discardChunks reads a chunked body to its end and counts its bytes.
func (c *pollConn) discardChunks() (int64, error) {
	var total int64
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return total, fmt.Errorf("reading a chunk's size: %w", err)
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		if err != nil || n < 0 {
			return total, fmt.Errorf("%w: chunk size %q", errMalformed, line)
		}
		if n == 0 {
			// Trailers, to the empty line.
			for {
				t, err := c.r.ReadSlice('\n')
				if err != nil {
					return total, fmt.Errorf("reading the trailer: %w", err)
				}
				if len(bytes.TrimRight(t, "\r\n")) == 0 {
					return total, nil
				}
			}
		}
		got, err := c.r.Discard(int(n))
		total += int64(got)
		if err != nil {
			return total, err
		}
		if crlf, err := c.r.ReadSlice('\n'); err != nil || len(bytes.TrimRight(crlf, "\r\n")) != 0 {
			return total, fmt.Errorf("%w: no CRLF after a chunk", errMalformed)
		}
	}
}

// equalToken reports whether b is the HTTP token s in any ASCII case:
// header names and tokens fold ASCII case only (RFC 9110, as net/http
// reads them), not by Unicode rules, under which "chun\u212Aed" (KELVIN
// SIGN) would be chunked.
func equalToken(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// isHeaderName reports whether name is a non-empty run of printable ASCII
// other than space, as every header name net/http accepts is.
func isHeaderName(name []byte) bool {
	for _, c := range name {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return len(name) > 0
}
