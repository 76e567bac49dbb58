package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

// eventStream is one viewer's open event stream, once its handler has
// returned: the connection is taken over from net/http (Hijack), so an idle
// stream holds no handler goroutine, no net/http read and write buffers and
// no request, only this struct, its bell's subscription and one small
// goroutine blocked reading the connection, which is how a client that goes
// away is noticed at once. Events are written on the goroutine that
// delivers the bell's state (the bell's own: the store's drain of this
// bell's live read, or the bell's delivery of the shared Admin read), with
// a pooled buffer; a state that arrives while one is being written replaces
// any older one not yet written, so a slow client costs its own stream
// only, within eventWriteBudget per write.
type eventStream struct {
	srv     *server
	viewer  string
	conn    net.Conn
	release func() // gives the stream's slot back

	mu      sync.Mutex
	sub     rx.Subscription
	state   *notifications.BellState // the latest state, not yet written
	failure bool                     // the bell failed: a failure event is due, then the end
	done    bool                     // the bell ended: the stream ends once written out
	writing bool                     // a state is being written
	closed  bool
}

// framePool holds the buffers events are encoded into while written.
var framePool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// startStream answers the event-stream request on conn, taken over from
// net/http, with the headers h (the ones the handlers set) and the hello
// event, then subscribes the viewer's bell. It owns release and conn from
// here on.
func (s *server) startStream(conn net.Conn, h http.Header, viewer string, release func()) {
	es := &eventStream{srv: s, viewer: viewer, conn: conn, release: release}
	buf := framePool.Get().(*bytes.Buffer)
	buf.Reset()
	buf.WriteString("HTTP/1.1 200 OK\r\n")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	// The body ends when the connection does: no length, no chunking.
	h.Set("Connection", "close")
	_ = h.Write(buf)
	buf.WriteString("\r\n")
	hello, _ := json.Marshal(map[string]string{"viewer": viewer})
	buf.WriteString("event: hello\ndata: ")
	buf.Write(hello)
	buf.WriteString("\n\n")
	err := es.write(buf)
	framePool.Put(buf)
	if err != nil || !s.track(es) {
		es.close()
		return
	}
	go es.watch()
	sub := s.svc.Bell(viewer).Subscribe(rx.NewObserver(es.put, es.fail, es.complete))
	es.mu.Lock()
	if es.closed {
		es.mu.Unlock()
		sub.Unsubscribe()
		return
	}
	es.sub = sub
	es.mu.Unlock()
}

// watch reads the connection until it ends, then ends the stream: a client
// sends nothing after its request, so this is where its going away shows.
// A byte sent anyway ends the stream too (the response said Connection:
// close), rather than costing a read per byte for as long as it likes.
func (es *eventStream) watch() {
	var b [1]byte
	_, _ = es.conn.Read(b[:])
	es.close()
}

func (es *eventStream) put(st notifications.BellState) {
	es.mu.Lock()
	es.state = &st
	es.kick()
}

func (es *eventStream) fail(err error) {
	es.srv.log.Warn("bell: stream failed", "viewer", es.viewer, "err", err)
	es.mu.Lock()
	es.failure, es.done = true, true
	es.kick()
}

func (es *eventStream) complete() {
	es.mu.Lock()
	es.done = true
	es.kick()
}

// kick writes what is due unless a write is under way, which then writes
// it; it is called with es.mu held and releases it.
func (es *eventStream) kick() {
	if es.writing || es.closed {
		es.mu.Unlock()
		return
	}
	es.writing = true
	es.mu.Unlock()
	es.writeOut()
}

// writeOut writes what is due until nothing is, then ends the stream if the
// bell has ended or a write failed.
func (es *eventStream) writeOut() {
	buf := framePool.Get().(*bytes.Buffer)
	defer framePool.Put(buf)
	for {
		es.mu.Lock()
		st, failure, done := es.state, es.failure, es.done
		es.state, es.failure = nil, false
		if st == nil && !failure && !done || es.closed {
			es.writing = false
			es.mu.Unlock()
			return
		}
		es.mu.Unlock()
		buf.Reset()
		if st != nil {
			es.srv.frames.bellEvent(buf, es.viewer, *st)
		}
		if failure {
			buf.WriteString("event: failure\ndata: {\"error\":\"the bell's live read ended; reload to resubscribe\"}\n\n")
		}
		if err := es.write(buf); err != nil || done {
			es.mu.Lock()
			es.writing = false
			es.mu.Unlock()
			es.close()
			return
		}
	}
}

// write writes buf within eventWriteBudget: a client that stops reading
// does not hold the writer.
func (es *eventStream) write(buf *bytes.Buffer) error {
	if buf.Len() == 0 {
		return nil
	}
	_ = es.conn.SetWriteDeadline(time.Now().Add(eventWriteBudget))
	_, err := es.conn.Write(buf.Bytes())
	return err
}

// close ends the stream once: the bell is unsubscribed, the connection
// closed (ending watch) and the slot given back.
func (es *eventStream) close() {
	es.mu.Lock()
	if es.closed {
		es.mu.Unlock()
		return
	}
	es.closed = true
	sub := es.sub
	es.sub = nil
	es.mu.Unlock()
	_ = es.conn.Close() // first: it ends a write under way
	if sub != nil {
		sub.Unsubscribe()
	}
	es.srv.untrack(es)
	es.release()
}

// frameCache encodes bell events, sharing the work between streams: each
// notification is encoded once (per whether it is the viewer's own) and the
// encoding reused for every stream that shows it, so an Admin notification
// seen by 10,000 admins is encoded once, not 10,000 times; and a state the
// bells share (notifications.BellState says when) has its groups encoded
// once for every stream with none of them its own. It holds at most
// frameCacheSize item and stateCacheSize state encodings, starting afresh
// when full.
type frameCache struct {
	mu     sync.Mutex
	items  map[itemKey][]byte
	states map[*notifications.Group][]byte // a state's groups, by its first group
}

const (
	frameCacheSize = 8192
	stateCacheSize = 16
)

type itemKey struct {
	n   notifications.Notification
	own bool
}

// bellEvent appends the "bell" event of viewer's state st to buf: the
// JSON of viewOf(viewer, st).
func (c *frameCache) bellEvent(buf *bytes.Buffer, viewer string, st notifications.BellState) {
	buf.WriteString("event: bell\ndata: {\"viewer\":")
	writeString(buf, viewer)
	buf.WriteString(`,"unread":`)
	buf.WriteString(strconv.Itoa(st.Unread))
	buf.WriteString(`,"groups":`)
	c.groups(buf, viewer, st.Groups)
	buf.WriteString("}\n\n")
}

// groups appends the JSON array of groups as viewer's stream shows them.
func (c *frameCache) groups(buf *bytes.Buffer, viewer string, groups []notifications.Group) {
	var key *notifications.Group
	if len(groups) > 0 && !ownAny(viewer, groups) {
		key = &groups[0]
		c.mu.Lock()
		b, ok := c.states[key]
		c.mu.Unlock()
		if ok {
			buf.Write(b)
			return
		}
	}
	start := buf.Len()
	buf.WriteByte('[')
	for gi, g := range groups {
		if gi > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"source":`)
		writeString(buf, g.Source)
		buf.WriteString(`,"items":[`)
		for ii, n := range g.Items {
			if ii > 0 {
				buf.WriteByte(',')
			}
			buf.Write(c.item(n, strings.EqualFold(n.Addressee, viewer)))
		}
		buf.WriteString("]}")
	}
	buf.WriteByte(']')
	if key != nil {
		b := bytes.Clone(buf.Bytes()[start:])
		c.mu.Lock()
		if c.states == nil || len(c.states) >= stateCacheSize {
			c.states = make(map[*notifications.Group][]byte)
		}
		c.states[key] = b
		c.mu.Unlock()
	}
}

// ownAny reports whether any of the notifications in groups is viewer's own.
func ownAny(viewer string, groups []notifications.Group) bool {
	for _, g := range groups {
		for _, n := range g.Items {
			if strings.EqualFold(n.Addressee, viewer) {
				return true
			}
		}
	}
	return false
}

// item returns the JSON of n as a stream shows it; the result is shared
// and must not be changed.
func (c *frameCache) item(n notifications.Notification, own bool) []byte {
	k := itemKey{n: n, own: own}
	c.mu.Lock()
	b, ok := c.items[k]
	c.mu.Unlock()
	if ok {
		return b
	}
	b, err := json.Marshal(itemView{Notification: n, Addressee: n.Addressee, Own: own})
	if err != nil {
		// Every field is a string, a bool or a time; kept for safety.
		b = []byte(fmt.Sprintf(`{"id":%q,"title":"(not encodable)"}`, n.ID))
	}
	c.mu.Lock()
	if c.items == nil || len(c.items) >= frameCacheSize {
		c.items = make(map[itemKey][]byte)
	}
	c.items[k] = b
	c.mu.Unlock()
	return b
}

// writeString appends s as a JSON string, as encoding/json writes it.
func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s)
	buf.Write(b)
}
