//go:build unix

package main

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/meshrx/meshrx/registry"
)

// A stalled stream is reset (SO_LINGER 0) so that its socket's unsent
// bytes are dropped, also on the bell's connections, which come through
// the registry's connection limiter (a wrapper offering SyscallConn but
// not SetLinger): the client sees the connection reset, not a plain end.
// Negative control: the reset before this fix (SetLinger only) did nothing
// on the limiter's connection, the client read a plain EOF and this
// failed.
func TestAStalledStreamBehindTheConnectionLimiterIsReset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := registry.LimitListener(ln, 4)
	defer lim.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := lim.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sc.(interface{ SetLinger(int) error }); ok {
		t.Fatalf("the limiter's connection (%T) now offers SetLinger: this test no longer covers the descriptor path", sc)
	}
	es := &eventStream{conn: sc, raw: rawConn(sc)}
	if es.raw == nil {
		t.Fatalf("the limiter's connection (%T) offers no descriptor", sc)
	}
	if _, err := sc.Write([]byte("unread")); err != nil {
		t.Fatal(err)
	}
	es.reset()
	_ = sc.Close()
	// A real socket's answer is the subject: the wait for it is bounded.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(c)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading from a reset stream's connection: got %v, want the connection reset (ECONNRESET)", err)
	}
}
