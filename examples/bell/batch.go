package main

import (
	"bytes"
	"log/slog"
	"os"
	"syscall"

	"github.com/meshrx/meshrx/internal/sockbatch"
)

// Bounds of one writer's batch: the events written with one system call.
const (
	writeBatch      = 256                 // events (the ring's entries)
	writeBatchBytes = maxWriterBuffer / 2 // bytes: no event is added once the batch holds this many
)

// batch is one writer's io_uring batch (see writers): the streams it takes
// from the queue at once, their events encoded one after the other into
// buf, and written with one system call, each to its own socket.
//
// Every guarantee of a write per stream holds per stream: the send is
// made once, without waiting (MSG_DONTWAIT); a socket that takes part of
// its event or none (EAGAIN) hands the rest to the stream's own goroutine
// (written, as writeOut does); a failed socket ends its own stream only.
// A stream stays busy (held by this writer) from its take until its
// result is handled, so it is in a batch at most once and no write of it
// overlaps another. Each descriptor is held open (RawConn.Control) across
// the system call, so a stream closed meanwhile cannot have its
// descriptor's number reused by another connection under the send. What a
// batch holds is bounded: writeBatch events and about writeBatchBytes.
type batch struct {
	ring   *sockbatch.Ring
	broken bool // the ring failed (and closed itself): each stream is written as before
	log    *slog.Logger
	buf    bytes.Buffer
	items  []batchItem
	sends  []sockbatch.Op
	spare  bytes.Buffer // a stream without a descriptor is written as before, with this
}

type batchItem struct {
	es         *eventStream
	start, end int  // its event in buf
	done       bool // the bell ended: the stream ends once this is written
	send       int  // its index in sends; -1 when it has nothing to write
	closed     bool // its descriptor was closed before the send
}

// usable reports whether the ring still works (it is closed when it fails,
// and the writer writes each stream itself from then on).
func (b *batch) usable() bool { return !b.broken }

// write writes es and the streams queued behind it in due, up to a batch.
func (b *batch) write(es *eventStream, due <-chan *eventStream) {
	b.buf.Reset()
	b.items, b.sends = b.items[:0], b.sends[:0]
	b.add(es)
more:
	for len(b.items) < writeBatch && b.buf.Len() < writeBatchBytes {
		select {
		case es := <-due:
			b.add(es)
		default:
			break more
		}
	}
	if len(b.items) > 0 {
		b.flush()
	}
	if b.buf.Cap() > maxWriterBuffer {
		b.buf = bytes.Buffer{}
	}
	if b.spare.Cap() > maxWriterBuffer {
		b.spare = bytes.Buffer{}
	}
	clear(b.items) // no stream stays referenced
	clear(b.sends)
}

// add takes what is due on es into the batch.
func (b *batch) add(es *eventStream) {
	if es.raw == nil {
		es.writeOut(&b.spare)
		return
	}
	start := b.buf.Len()
	done, ok := es.take(&b.buf)
	if !ok {
		return
	}
	b.items = append(b.items, batchItem{es: es, start: start, end: b.buf.Len(), done: done, send: -1})
}

// flush writes the batch's events and hands each stream its result.
func (b *batch) flush() {
	data := b.buf.Bytes() // no more encoding: the events stay where they are
	for i := range b.items {
		it := &b.items[i]
		if it.end > it.start {
			it.send = len(b.sends)
			b.sends = append(b.sends, sockbatch.Op{B: data[it.start:it.end:it.end]})
		}
	}
	var err error
	b.hold(0, func() { err = b.ring.Send(b.sends) })
	if err != nil {
		b.log.Warn("bell: the writers' io_uring failed; writing each stream with its own system call", "err", err)
		b.broken = true // the ring closed itself; it is kept, with any buffer the kernel still held
	}
	for i := range b.items {
		it := &b.items[i]
		b.result(it, data[it.start:it.end])
	}
}

// hold holds the descriptors of the items from i on open, each inside the
// RawConn.Control of the one before, then calls send; an item whose
// connection is closed already is marked so and left out of the sends.
func (b *batch) hold(i int, send func()) {
	for ; i < len(b.items); i++ {
		it := &b.items[i]
		if it.send < 0 {
			continue
		}
		err := it.es.raw.Control(func(fd uintptr) {
			b.sends[it.send].FD = int(fd)
			b.hold(i+1, send)
		})
		if err == nil {
			return // the rest was held, and sent, inside
		}
		it.closed = true
		b.sends[it.send].FD = -1
		b.sends[it.send].B = nil // not sent
	}
	send()
}

// result hands one stream its send's outcome as writeOut would.
func (b *batch) result(it *batchItem, event []byte) {
	es := it.es
	if it.send < 0 { // the bell completed: nothing was due to be written
		es.wrote(it.done)
		return
	}
	if it.closed {
		es.end()
		return
	}
	s := b.sends[it.send]
	switch {
	case s.Err == sockbatch.ErrNotSent || s.Err == syscall.ECANCELED:
		// The ring failed first, or cancelled the send (stuck) before it
		// took anything: written as before.
		n, err := es.writeNow(event)
		es.written(event, n, err, it.done)
	case s.Err == sockbatch.ErrStuck:
		// Whether its socket took the event is unknown: the stream is
		// no longer coherent, so it ends (its client reconnects).
		es.reset()
		es.end()
	case s.Err == nil && s.N == len(event):
		es.written(event, s.N, nil, it.done)
	case s.Err == nil || s.Err == syscall.EAGAIN || s.Err == syscall.EINTR:
		// Full, or room for part of it: the rest to its own goroutine.
		es.written(event, s.N, os.ErrDeadlineExceeded, it.done)
	default:
		es.written(event, s.N, s.Err, it.done)
	}
}

// close closes the writer's ring.
func (b *batch) close() {
	_ = b.ring.Close()
}
