package main

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx/rxtest"
)

// framingServer answers the pollers' requests in turn with a body of a
// known length, a chunked body, a 304, and a 410 to a delta request, and
// counts the connections it accepted. closeEach answers every request
// with Connection: close.
func framingServer(t *testing.T, closeEach bool) (*httptest.Server, *atomic.Int64) {
	var conns, n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if closeEach {
			w.Header().Set("Connection", "close")
		}
		if r.Header.Get("Authorization") != "Bearer k" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Query().Get("since") == "old" {
			w.WriteHeader(http.StatusGone)
			return
		}
		switch n.Add(1) % 3 {
		case 0:
			w.Header().Set("ETag", `"fixed"`)
			w.Header().Set("Content-Length", "5")
			_, _ = w.Write([]byte("hello"))
		case 1:
			w.Header().Set("ETag", `"chunked"`)
			for range 3 {
				_, _ = w.Write([]byte(strings.Repeat("x", 3000)))
				w.(http.Flusher).Flush() // no Content-Length: chunks
			}
		case 2:
			w.WriteHeader(http.StatusNotModified)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// The pollers speak HTTP/1.1 themselves (pollconn.go): every poll reads
// its whole answer, whatever its framing (Content-Length, chunks, none for
// a 304), counts its body and keeps the ETag, a 410 to a delta is followed
// by the whole document, and one poller polling one at a time keeps one
// connection. Negative control, run here: a server that closes after each
// answer makes the same polls dial once each, so the count of connections
// sees reuse.
func TestAPollerReadsEveryFramingOfAnAnswerOnTheConnectionItKeeps(t *testing.T) {
	polls := func(closeEach bool) (int64, []sample, string) {
		srv, conns := framingServer(t, closeEach)
		clk := rxtest.NewClock()
		l := load{url: srv.URL, key: "k", clk: clk, deltas: true}
		target, err := parsePollTarget(srv.URL)
		require.NoError(t, err)
		pool := newPollConns(t.Context(), target, 1)
		defer pool.closeIdle()
		held := &pollerState{l: l, target: target, full: target.request("k", "", "")}
		held.set(`"old"`)
		var got []sample
		for range 6 {
			got = append(got, l.poll(t.Context(), pool, held, clk.Now()))
		}
		tag, _ := held.get()
		return conns.Load(), got, tag
	}
	conns, got, tag := polls(false)
	require.Len(t, got, 6)
	for _, s := range got {
		require.NoError(t, s.err)
		assert.False(t, s.failed())
		assert.GreaterOrEqual(t, s.written, time.Duration(0), "the write was timed")
	}
	assert.True(t, got[0].gone, "the delta since a gone generation is followed by the whole document")
	assert.Equal(t, http.StatusOK, got[0].status)
	assert.Equal(t, int64(9000), got[0].bytes, "the chunked body, counted whole")
	assert.Equal(t, http.StatusNotModified, got[1].status)
	assert.Equal(t, int64(0), got[1].bytes)
	assert.Equal(t, http.StatusOK, got[2].status)
	assert.Equal(t, int64(5), got[2].bytes, "the body of its Content-Length")
	assert.Equal(t, int64(9000), got[3].bytes)
	assert.Equal(t, `"fixed"`, tag, "the poller keeps the last document's ETag")
	assert.Equal(t, int64(1), conns, "one poller polling one at a time keeps one connection")

	conns, got, _ = polls(true)
	for _, s := range got {
		require.NoError(t, s.err)
	}
	assert.Equal(t, int64(7), conns, "control: a server closing after each answer is dialled for each (6 polls, one of them two requests)")
}

// An answer the pollers cannot read is an error of that poll, never a
// panic, and the poll after it dials anew. Control: the same poller
// against a server answering well has no error (above).
func TestAMalformedAnswerIsAPollsErrorNotAPanic(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	answers := []string{
		"HTTP/1.1 2x0 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
		"garbage\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, a := range answers {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(c).ReadString('\n')
			_, _ = c.Write([]byte(a))
			_ = c.Close()
		}
	}()
	clk := rxtest.NewClock()
	l := load{url: "http://" + ln.Addr().String() + "/index", key: "k", clk: clk}
	target, err := parsePollTarget(l.url)
	require.NoError(t, err)
	pool := newPollConns(t.Context(), target, 1)
	defer pool.closeIdle()
	held := &pollerState{l: l, target: target, full: target.request("k", "", "")}
	held.set("")
	for _, a := range answers {
		s := l.poll(t.Context(), pool, held, clk.Now())
		assert.Error(t, s.err, "answer %q", a)
		assert.True(t, s.failed(), "answer %q", a)
	}
	select {
	case <-done:
	case <-time.After(bound):
		require.FailNow(t, "the server did not see every poll")
	}

	_, err = parsePollTarget("https://example.com/index")
	assert.ErrorContains(t, err, "plain HTTP/1.1")
}

// connCounter counts the connections srv accepts; set before srv.Start.
func connCounter(srv *httptest.Server) *atomic.Int64 {
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	return &conns
}

// A server closes its idle kept connections (an idle timeout, a limit
// closing the oldest, a restart); net/http's client retries a GET that
// failed before any byte of its answer on a new connection, and so must
// the pollers: the retry is dialled, not the next idle connection, which
// the server closed too, and the connection that failed is not kept.
// Negative control, run: with the retry taking the next idle connection
// (p.get() as before the fix) the poll fails with "reading the status
// line: EOF".
func TestAPollWhoseKeptConnectionsTheServerClosedIsAnsweredOnANewOne(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"x"`)
		w.WriteHeader(http.StatusNotModified)
	}))
	conns := connCounter(srv)
	srv.Start()
	t.Cleanup(srv.Close)
	clk := rxtest.NewClock()
	l := load{url: srv.URL, key: "k", clk: clk}
	target, err := parsePollTarget(srv.URL)
	require.NoError(t, err)
	pool := newPollConns(t.Context(), target, 2)
	defer pool.closeIdle()
	held := &pollerState{l: l, target: target, full: target.request("k", "", "")}
	held.set("")

	// Two kept connections, each having carried an answer (so the
	// server holds both as idle).
	var kept []*pollConn
	for range 2 {
		c, _, err := pool.get()
		require.NoError(t, err)
		kept = append(kept, c)
	}
	for _, c := range kept {
		a, keep, _, err := c.exchange(held.full, "", func() {})
		require.NoError(t, err)
		require.True(t, keep)
		require.Equal(t, http.StatusNotModified, a.status)
		pool.put(c)
	}
	require.Equal(t, int64(2), conns.Load())

	srv.CloseClientConnections()

	s := l.poll(t.Context(), pool, held, clk.Now())
	require.NoError(t, s.err)
	assert.False(t, s.failed())
	assert.Equal(t, http.StatusNotModified, s.status)
	assert.GreaterOrEqual(t, s.written, time.Duration(0), "the write was timed")
	assert.Equal(t, int64(3), conns.Load(), "the retry was dialled")
	pool.mu.Lock()
	defer pool.mu.Unlock()
	assert.Len(t, pool.idle, 2, "the stale connection not tried and the new one")
	assert.NotContains(t, pool.idle, kept[1], "the connection that failed is not kept")
}

// hijackServer answers the n-th request (from 1) with raw(n) written on
// the hijacked connection, or normally with ETag "real" when raw returns
// "". closeAfter closes a hijacked connection after its answer.
func hijackServer(t *testing.T, raw func(n int64) string, closeAfter bool) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	var mu sync.Mutex
	var hijacked []net.Conn
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := raw(n.Add(1))
		if a == "" {
			w.Header().Set("ETag", `"real"`)
			_, _ = w.Write([]byte("real"))
			return
		}
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte(a))
		if closeAfter {
			_ = c.Close()
			return
		}
		mu.Lock()
		hijacked = append(hijacked, c)
		mu.Unlock()
	}))
	conns := connCounter(srv)
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range hijacked {
			_ = c.Close()
		}
	})
	return srv, conns
}

// Bytes left after an answer are no answer to a request the poller has
// not written yet: net/http closes such a connection, and so do the
// pollers, so the next poll gets the server's answer to it, on a new
// connection. Negative control, run: without the check of the buffered
// bytes before a connection is kept, the second poll takes the
// unsolicited answer (ETag "ghost") for its own.
func TestBytesLeftAfterAnAnswerAreNotTakenForTheNextPollsAnswer(t *testing.T) {
	srv, conns := hijackServer(t, func(n int64) string {
		if n == 1 {
			return "HTTP/1.1 200 OK\r\nETag: \"a\"\r\nContent-Length: 2\r\n\r\nok" +
				"HTTP/1.1 200 OK\r\nETag: \"ghost\"\r\nContent-Length: 0\r\n\r\n"
		}
		return ""
	}, false)
	clk := rxtest.NewClock()
	l := load{url: srv.URL, key: "k", clk: clk}
	target, err := parsePollTarget(srv.URL)
	require.NoError(t, err)
	pool := newPollConns(t.Context(), target, 1)
	defer pool.closeIdle()
	held := &pollerState{l: l, target: target, full: target.request("k", "", "")}
	held.set("")

	s := l.poll(t.Context(), pool, held, clk.Now())
	require.NoError(t, s.err)
	tag, _ := held.get()
	assert.Equal(t, `"a"`, tag)
	assert.Equal(t, int64(2), s.bytes)

	s = l.poll(t.Context(), pool, held, clk.Now())
	require.NoError(t, s.err)
	tag, _ = held.get()
	assert.Equal(t, `"real"`, tag, "the second poll's answer is the server's, not the leftover")
	assert.Equal(t, int64(4), s.bytes)
	assert.Equal(t, int64(2), conns.Load(), "the connection with leftover bytes was not kept")
}

// An answer with two different Content-Lengths cannot be framed: net/http
// refuses it, and so do the pollers (that poll's error, never a panic),
// while the same length repeated is read. Negative control, run: with
// the last Content-Length taken, the conflicting answer is read as 2
// bytes and counts as answered.
func TestConflictingContentLengthsAreAMalformedAnswer(t *testing.T) {
	answers := []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length:  5\r\nConnection: close\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhello",
	}
	poll := pollAnswers(t, answers)

	s := poll()
	require.NoError(t, s.err, "the same length repeated")
	assert.Equal(t, int64(5), s.bytes)

	s = poll()
	assert.ErrorIs(t, s.err, errMalformed)
	assert.ErrorContains(t, s.err, "Content-Length")
	assert.True(t, s.failed())

	s = poll()
	require.NoError(t, s.err, "the poll after it is answered")
	assert.Equal(t, int64(4), s.bytes)
}

// Header names and tokens are ASCII case-insensitive (RFC 9110), as
// net/http reads them: "Transfer-Encoding: chun\u212Aed" (U+212A KELVIN
// SIGN) is no chunked framing and "Tran\u017Ffer-Encoding" (U+017F LONG S)
// no header name, so the pollers refuse both answers (that poll's error),
// as net/http does, instead of reading chunks from them. Controls: net/http
// refuses both; the poll after them is answered.
// Negative control, run by hand: with bytes.EqualFold on the names and
// tokens (the code before), the chun\u212Aed answer was read as 5 chunked
// bytes with no error.
func TestATransferEncodingThatOnlyUnicodeFoldingMakesChunkedIsAMalformedAnswer(t *testing.T) {
	answers := []string{
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chun\u212Aed\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTran\u017Ffer-Encoding: chunked\r\nConnection: close\r\n\r\nhello",
	}
	for _, a := range answers {
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(a)), nil)
		if err == nil {
			_ = resp.Body.Close()
		}
		require.Error(t, err, "control: net/http refuses %q", a)
	}
	poll := pollAnswers(t, answers)

	for _, a := range answers {
		s := poll()
		assert.ErrorIs(t, s.err, errMalformed, "%q", a)
	}
	s := poll()
	require.NoError(t, s.err, "control: the poll after them is answered")
	assert.Equal(t, int64(4), s.bytes)
}

// pollAnswers starts a server that gives answers in turn, one per
// connection, then the 4-byte answer hijackServer gives, and returns a
// function that makes one poll on it as the pollers do (one kept
// connection).
func pollAnswers(t *testing.T, answers []string) func() sample {
	srv, _ := hijackServer(t, func(n int64) string {
		if int(n) <= len(answers) {
			return answers[n-1]
		}
		return ""
	}, true)
	clk := rxtest.NewClock()
	l := load{url: srv.URL, key: "k", clk: clk}
	target, err := parsePollTarget(srv.URL)
	require.NoError(t, err)
	pool := newPollConns(t.Context(), target, 1)
	t.Cleanup(pool.closeIdle)
	held := &pollerState{l: l, target: target, full: target.request("k", "", "")}
	held.set("")
	return func() sample { return l.poll(t.Context(), pool, held, clk.Now()) }
}
