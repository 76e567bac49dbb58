package main

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
