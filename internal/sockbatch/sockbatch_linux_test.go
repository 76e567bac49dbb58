//go:build linux

package sockbatch_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/meshrx/meshrx/internal/sockbatch"
	"github.com/meshrx/meshrx/internal/sockbatch/sockbatchtest"
)

// newRing is a ring of entries; the test is skipped where io_uring is
// unavailable, or fails there with MESHRX_REQUIRE_IOURING=1 (as CI runs
// it). The callers' fallback, a write per socket, is tested whether or not
// io_uring works (examples/bell -write-each, examples/bellload -read-each).
func newRing(t *testing.T, entries int) *sockbatch.Ring {
	t.Helper()
	return newRingWith(t, entries, sockbatch.Options{})
}

// newRingWith is newRing with opts.
func newRingWith(t *testing.T, entries int, opts sockbatch.Options) *sockbatch.Ring {
	t.Helper()
	sockbatchtest.Require(t)
	r, err := sockbatch.New(entries, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// pair is a connected stream socket pair: w is written through the ring,
// r read by the test.
func pair(t *testing.T, sndbuf int) (w int, r *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sndbuf > 0 {
		if err := syscall.SetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_SNDBUF, sndbuf); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { syscall.Close(fds[0]) })
	f := os.NewFile(uintptr(fds[1]), "peer")
	t.Cleanup(func() { f.Close() })
	return fds[0], f
}

// fill writes to fd until its socket takes no more.
func fill(t *testing.T, fd int) {
	t.Helper()
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64<<10)
	for {
		_, err := syscall.Write(fd, b)
		if err == syscall.EAGAIN {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// readN reads exactly n bytes from f.
func readN(t *testing.T, f *os.File, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		t.Fatalf("reading %d bytes: %v", n, err)
	}
	return b
}

func TestABatchWritesEverySocketItsOwnBytesInOneCall(t *testing.T) {
	r := newRing(t, 256)
	const streams = 300 // more than the ring's entries: sent in two parts
	sends := make([]sockbatch.Op, streams)
	peers := make([]*os.File, streams)
	for i := range sends {
		fd, peer := pair(t, 0)
		sends[i] = sockbatch.Op{FD: fd, B: []byte(fmt.Sprintf("event %d of stream %d\n", i*7, i))}
		peers[i] = peer
	}
	if err := r.Send(sends); err != nil {
		t.Fatal(err)
	}
	for i, s := range sends {
		if s.Err != nil || s.N != len(s.B) {
			t.Fatalf("send %d: N=%d of %d, Err=%v", i, s.N, len(s.B), s.Err)
		}
		if got := readN(t, peers[i], len(s.B)); !bytes.Equal(got, s.B) {
			t.Fatalf("stream %d got %q, want %q", i, got, s.B)
		}
	}
}

// A full socket fails its own send at once with EAGAIN, taking nothing,
// and every other send of the batch goes. Negative control: without
// MSG_DONTWAIT the ring keeps the full socket's send waiting (it arms a
// poll), and Send returns only after its completion budget with ErrStuck
// (run when that was a 1 s wall-clock wait: "sockbatch: 1 of 3 sends not
// completed within 1s"; see stuck_linux_test.go for that path now).
func TestAFullSocketFailsItsOwnSendWithEAGAINAndTheOthersGo(t *testing.T) {
	r := newRing(t, 8)
	full, fullPeer := pair(t, 4096)
	fill(t, full)
	a, aPeer := pair(t, 0)
	b, bPeer := pair(t, 0)
	sends := []sockbatch.Op{{FD: a, B: []byte("to a")}, {FD: full, B: []byte("to the full one")}, {FD: b, B: []byte("to b")}}
	if err := r.Send(sends); err != nil {
		t.Fatal(err)
	}
	if sends[1].Err != syscall.EAGAIN || sends[1].N != 0 {
		t.Fatalf("the full socket's send: N=%d, Err=%v; want 0, EAGAIN", sends[1].N, sends[1].Err)
	}
	if got := string(readN(t, aPeer, 4)); got != "to a" {
		t.Fatalf("a got %q", got)
	}
	if got := string(readN(t, bPeer, 4)); got != "to b" {
		t.Fatalf("b got %q", got)
	}
	_ = fullPeer
}

// A socket with room for part of the bytes takes that part and the send
// says how much: the peer gets exactly those bytes, the rest is the
// caller's to write. Negative control: reporting the length asked for
// (N = len(B)) fails the comparison of what the peer read.
func TestASocketWithRoomForPartTakesPartAndSaysHowMuch(t *testing.T) {
	r := newRing(t, 4)
	fd, peer := pair(t, 4096)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: more than the socket holds
	sends := []sockbatch.Op{{FD: fd, B: big}}
	if err := r.Send(sends); err != nil {
		t.Fatal(err)
	}
	n := sends[0].N
	if sends[0].Err != nil || n <= 0 || n >= len(big) {
		t.Fatalf("N=%d of %d, Err=%v; want part of it and no error", n, len(big), sends[0].Err)
	}
	syscall.Close(fd) // the peer then reads to the end
	got, err := io.ReadAll(peer)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, big[:n]) {
		t.Fatalf("the peer read %d bytes, want the %d the send reported", len(got), n)
	}
}

// A send to a socket whose peer is gone fails with that socket's error and
// no signal; the other sends of the batch go.
func TestASendToAClosedPeerFailsOnlyItsOwn(t *testing.T) {
	r := newRing(t, 8)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	_ = client.(*net.TCPConn).SetLinger(0) // its close resets the connection
	client.Close()
	ok, okPeer := pair(t, 0)
	raw, err := server.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var sends []sockbatch.Op
	cerr := raw.Control(func(fd uintptr) {
		// Once the reset has arrived a send fails; until it has, it may
		// be taken: send until it fails (bounded).
		for range 1000 {
			sends = []sockbatch.Op{{FD: int(fd), B: []byte("to the gone peer")}, {FD: ok, B: []byte("ok")}}
			if err := r.Send(sends); err != nil {
				t.Fatal(err)
			}
			if got := string(readN(t, okPeer, 2)); got != "ok" {
				t.Fatalf("the other socket got %q", got)
			}
			if sends[0].Err != nil {
				return
			}
		}
	})
	if cerr != nil {
		t.Fatal(cerr)
	}
	if e := sends[0].Err; e != syscall.EPIPE && e != syscall.ECONNRESET {
		t.Fatalf("the send to the gone peer: N=%d, Err=%v; want EPIPE or ECONNRESET", sends[0].N, e)
	}
}

func TestABadDescriptorFailsOnlyItsOwnSend(t *testing.T) {
	r := newRing(t, 8)
	ok, okPeer := pair(t, 0)
	sends := []sockbatch.Op{{FD: -1, B: []byte("x")}, {FD: ok, B: []byte("ok")}, {FD: 1 << 20, B: []byte("y")}}
	if err := r.Send(sends); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		if sends[i].Err != syscall.EBADF {
			t.Errorf("send %d to a bad descriptor: Err=%v, want EBADF", i, sends[i].Err)
		}
	}
	if sends[1].Err != nil || string(readN(t, okPeer, 2)) != "ok" {
		t.Fatalf("the good send: N=%d, Err=%v", sends[1].N, sends[1].Err)
	}
}

func TestAnEmptySendIsNotSubmittedAndAClosedRingRefusesTheBatch(t *testing.T) {
	r := newRing(t, 2)
	fd, _ := pair(t, 0)
	sends := []sockbatch.Op{{FD: fd}, {FD: -1}}
	if err := r.Send(sends); err != nil || sends[0].Err != nil || sends[1].Err != nil {
		t.Fatalf("empty sends: %v, %+v", err, sends)
	}
	r.Close()
	sends = []sockbatch.Op{{FD: fd, B: []byte("x")}}
	if err := r.Send(sends); !errors.Is(err, sockbatch.ErrClosed) || sends[0].Err != sockbatch.ErrNotSent {
		t.Fatalf("after Close: %v, %v; want ErrClosed, ErrNotSent", err, sends[0].Err)
	}
}

// A batch of reads gives each socket's bytes to its own buffer, EAGAIN
// for a socket with nothing to read (taking nothing), and 0 bytes with no
// error for one whose peer closed. Negative control: without MSG_DONTWAIT
// the read of the empty socket waits in the ring, and Recv returns only
// after its completion budget with ErrStuck.
func TestARecvBatchReadsEachSocketsOwnBytesAndEAGAINWhereThereAreNone(t *testing.T) {
	r := newRing(t, 8)
	a, aPeer := pair(t, 0)
	empty, _ := pair(t, 0)
	closed, closedPeer := pair(t, 0)
	if _, err := aPeer.Write([]byte("for a")); err != nil {
		t.Fatal(err)
	}
	closedPeer.Close()
	ops := []sockbatch.Op{{FD: a, B: make([]byte, 64)}, {FD: empty, B: make([]byte, 64)}, {FD: closed, B: make([]byte, 64)}}
	if err := r.Recv(ops); err != nil {
		t.Fatal(err)
	}
	if ops[0].Err != nil || string(ops[0].B[:ops[0].N]) != "for a" {
		t.Errorf("a: N=%d, Err=%v, %q", ops[0].N, ops[0].Err, ops[0].B[:ops[0].N])
	}
	if ops[1].Err != syscall.EAGAIN || ops[1].N != 0 {
		t.Errorf("the empty socket: N=%d, Err=%v; want 0, EAGAIN", ops[1].N, ops[1].Err)
	}
	if ops[2].Err != nil || ops[2].N != 0 {
		t.Errorf("the closed peer's socket: N=%d, Err=%v; want 0, nil (end of stream)", ops[2].N, ops[2].Err)
	}
}
