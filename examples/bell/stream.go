package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/internal/sockbatch"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

// eventStream is one viewer's open event stream, once its handler has
// returned: the connection is taken over from net/http (Hijack), so an idle
// stream holds no handler goroutine, no net/http read and write buffers and
// no request, only this struct, its bell's subscription and one small
// goroutine blocked reading the connection, which is how a client that goes
// away is noticed at once.
//
// Events are written by the server's writers, a small fixed pool (see
// writers): the bell's delivery only records the stream's latest state and
// queues the stream, once, if it is not queued already. A state arriving
// before the last is written replaces it, so what a stream holds pending is
// bounded: its latest state, and the rest of one event its socket did not
// take at once. That rest is written by a goroutine of the stream's own
// (blocked while the socket is full, so a slow client holds no writer),
// and so are the stream's next events for as long as its socket takes
// them slowly (slow): a full socket costs a writer writeAtOnce once, not
// on every event. A stream whose socket takes nothing for eventWriteBudget,
// or not an event's rest within eventRestBudget, is closed, and its
// client's EventSource reconnects.
type eventStream struct {
	srv        *server
	viewer     string
	viewerJSON string // viewer as a JSON string, for each event's head
	conn       net.Conn
	raw        syscall.RawConn // conn's descriptor, when it offers one: written without waiting (see writeNow)
	release    func()          // gives the stream's slot back
	w          *writers        // the server's, set by track

	mu      sync.Mutex
	sub     rx.Subscription
	state   notifications.BellState // the latest state, not yet written (when due)
	due     bool                    // state is to be written
	failure bool                    // the bell failed: a failure event is due, then the end
	done    bool                    // the bell ended: the stream ends once written out
	busy    bool                    // queued for a writer, or being written: whoever holds it gives the slot back once closed
	slow    bool                    // the socket took an event slowly: the stream's own goroutine writes the next
	quick   uint8                   // whole events the socket took at once since (while slow)
	closed  bool

	// Owned by whoever holds the stream busy (see take).
	seq   uint64                  // the id of the last event with a state written
	shown notifications.BellState // that state, which the client holds: the next change is from it
}

// startStream answers the event-stream request on conn, taken over from
// net/http, with the headers h (the ones the handlers set) and the hello
// event, then subscribes the viewer's bell. It owns release and conn from
// here on. The stream is tracked before anything is written to it, so a
// shutdown closes it even while its first bytes wait on a slow client.
func (s *server) startStream(conn net.Conn, h http.Header, viewer string, release func()) {
	vj, _ := json.Marshal(viewer)
	viewerJSON := string(vj)
	if inner := viewerJSON[1 : len(viewerJSON)-1]; inner == viewer {
		// One string for both: each event reads the viewer (whose own
		// notifications it shows) and writes its JSON; apart, a broadcast
		// to 10,000 streams missed the cache twice per stream.
		viewer = inner
	}
	es := &eventStream{srv: s, viewer: viewer, viewerJSON: viewerJSON, conn: conn, release: release}
	es.raw = rawConn(conn)
	if !s.track(es) {
		es.close()
		return
	}
	var buf bytes.Buffer
	buf.WriteString("HTTP/1.1 200 OK\r\n")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	// The body ends when the connection does: no length, no chunking.
	h.Set("Connection", "close")
	_ = h.Write(&buf)
	buf.WriteString("\r\n")
	buf.WriteString("event: hello\ndata: {\"viewer\":")
	buf.WriteString(es.viewerJSON)
	buf.WriteString("}\n\n")
	if err := writeWithin(conn, buf.Bytes(), eventWriteBudget, eventRestBudget); err != nil {
		es.close()
		return
	}
	go es.watch()
	sub := s.svc.Bell(viewer).Subscribe(es)
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

// The stream is its bell's observer itself: a broadcast's delivery to an
// admin reaches put without passing through rx.NewObserver's struct and
// its three method-value closures, each a cache line of its own to miss
// per admin (the miss moved there once the bell's own were gone), and
// ≈ 100 B per idle stream.
var _ rx.Observer[notifications.BellState] = (*eventStream)(nil)

func (es *eventStream) OnNext(st notifications.BellState) { es.put(st) }
func (es *eventStream) OnError(err error)                 { es.fail(err) }
func (es *eventStream) OnCompleted()                      { es.complete() }

func (es *eventStream) put(st notifications.BellState) {
	es.mu.Lock()
	es.state, es.due = st, true
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

// kick queues the stream for a writer unless it is queued or being written
// already (that writer then writes what is due), or hands it to a goroutine
// of its own when its socket is slow; it is called with es.mu held and
// releases it.
func (es *eventStream) kick() {
	if es.busy || es.closed {
		es.mu.Unlock()
		return
	}
	es.busy = true
	slow := es.slow
	es.mu.Unlock()
	if slow {
		go es.writeOwn(nil, false)
		return
	}
	es.w.queue(es)
}

// take appends what is due to buf, the event to write, and
// reports whether the bell is done; ok is false when nothing is due or the
// stream is closed, and then the stream is no longer busy. It is called by
// whoever holds the stream busy.
func (es *eventStream) take(buf *bytes.Buffer) (done, ok bool) {
	es.mu.Lock()
	st, due, failure, done := es.state, es.due, es.failure, es.done
	es.state, es.due, es.failure = notifications.BellState{}, false, false
	if es.closed || !due && !failure && !done {
		es.idle()
		return false, false
	}
	es.mu.Unlock()
	if due {
		// The first state is whole; the next are what changed since the
		// state written before (or whole again when that is no larger).
		es.seq++
		buf.WriteString("id: ")
		buf.WriteString(strconv.FormatUint(es.seq, 10))
		buf.WriteByte('\n')
		if es.seq == 1 {
			es.srv.frames.bellEvent(buf, es.viewerJSON, es.viewer, st)
		} else {
			es.srv.frames.changeEvent(buf, es.viewerJSON, es.viewer, es.shown, st)
		}
		es.shown = st
	}
	if failure {
		buf.WriteString("event: failure\ndata: {\"error\":\"the bell's live read ended; reload to resubscribe\"}\n\n")
	}
	return done, true
}

// idle ends the stream's busy spell; it is called with es.mu held by the
// one holding the stream busy, and releases it. A stream closed while busy
// gives its slot back here, not in close: until now it held its place in
// the writers' queue or a goroutine, so open streams and queued ones
// together never pass the streams cap, the queue's size.
func (es *eventStream) idle() {
	es.busy = false
	closed := es.closed
	es.mu.Unlock()
	if closed {
		es.release()
	}
}

// end closes the stream from the path holding it busy, and gives its slot
// back (close leaves that to this path).
func (es *eventStream) end() {
	es.close()
	es.release()
}

// writeOut writes what is due, once, with buf (a writer's own): at once if
// the socket takes it, or else handing the rest to a goroutine of the
// stream's own, which writes the stream's next events too while its socket
// is slow. It requeues the stream when more came meanwhile.
func (es *eventStream) writeOut(buf *bytes.Buffer) {
	buf.Reset()
	done, ok := es.take(buf)
	if !ok {
		return
	}
	if buf.Len() == 0 { // the bell completed: nothing more to write
		es.wrote(done)
		return
	}
	n, err := es.writeNow(buf.Bytes())
	es.written(buf.Bytes(), n, err, done)
}

// written follows a writer's write of the event b, of which the socket
// took n bytes: err is nil when it took all, os.ErrDeadlineExceeded when
// it was full (the rest then goes to a goroutine of the stream's own,
// which writes its next events too while its socket is slow), another
// error when the connection failed (the stream ends). done says the bell
// has ended.
func (es *eventStream) written(b []byte, n int, err error, done bool) {
	switch {
	case err == nil:
		es.wrote(done)
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The socket is full: the rest waits on a goroutine of its own,
		// not on a writer the other streams need.
		rest := bytes.Clone(b[n:])
		es.mu.Lock()
		es.slow = true
		es.mu.Unlock()
		go es.writeOwn(rest, done)
	default:
		es.end()
	}
}

// writeNow writes b as far as the socket takes it at once, and returns
// os.ErrDeadlineExceeded with the bytes taken when it did not take all.
// When the connection offers its descriptor (a TCP connection does) it
// writes without waiting at all — no deadline, so a broadcast's 10,000
// writes arm no timer (they cost ≈ 8 % of the bell's CPU); otherwise it
// gives the socket writeAtOnce.
func (es *eventStream) writeNow(b []byte) (int, error) {
	if es.raw == nil {
		_ = es.conn.SetWriteDeadline(time.Now().Add(writeAtOnce))
		return es.conn.Write(b)
	}
	n := 0
	var werr error
	// Control, not Write: it only holds the descriptor open for the call
	// (one atomic add), where Write also takes the connection's write lock
	// and resets its poller state, a cold cache line per stream; the write
	// never waits for the socket, and whoever writes a stream holds it busy
	// (see take), so no other write interleaves.
	err := es.raw.Control(func(fd uintptr) {
		for n < len(b) {
			m, err := writeFD(fd, b[n:])
			if err == syscall.EINTR {
				continue
			}
			if err != nil || m <= 0 {
				werr = err
				break
			}
			n += m
		}
	})
	switch {
	case err != nil: // closed
		return n, err
	case werr == syscall.EAGAIN || werr == nil && n < len(b):
		return n, os.ErrDeadlineExceeded
	default:
		return n, werr
	}
}

// writeOwn writes rest, the end of an event the socket did not take at
// once (if any), then the stream's next events as they come, on the
// stream's own goroutine, for as long as its socket takes them slowly:
// slowQuickEvents whole events in a row taken within writeAtOnce hand the
// stream back to the writers (so a socket that fills again at every other
// event does not cost a writer writeAtOnce each time), and the goroutine
// ends when nothing is due. A stream whose client takes none of an event
// for eventWriteBudget, or not all of it within eventRestBudget, is reset
// (see writeWithin).
func (es *eventStream) writeOwn(rest []byte, done bool) {
	var buf bytes.Buffer
	whole := rest == nil // rest is an event's end, not a whole event
	for ; ; whole = true {
		if len(rest) > 0 {
			start := time.Now()
			if err := writeWithin(es.conn, rest, eventWriteBudget, eventRestBudget); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					es.srv.log.Warn("bell: a stream's client took no event in time; closing the stream", "viewer", es.viewer,
						"budget", eventWriteBudget, "rest budget", eventRestBudget)
					es.reset()
				}
				es.end()
				return
			}
			if whole {
				es.mu.Lock()
				if time.Since(start) >= writeAtOnce {
					es.quick = 0
				} else if es.quick++; es.quick >= slowQuickEvents {
					es.slow, es.quick = false, 0
				}
				es.mu.Unlock()
			}
		}
		if done {
			es.end()
			return
		}
		es.mu.Lock()
		if !es.slow && !es.closed && (es.due || es.failure || es.done) {
			es.mu.Unlock()
			es.w.queue(es) // still busy: back to the writers
			return
		}
		es.mu.Unlock()
		var ok bool
		buf.Reset()
		if done, ok = es.take(&buf); !ok {
			return
		}
		rest = buf.Bytes()
	}
}

// slowQuickEvents is how many events in a row a slow stream's socket takes
// at once before the stream's events go to the writers again.
const slowQuickEvents = 8

// writeWithin writes b to conn, giving up when the connection takes
// nothing for budget (the deadline is re-armed whenever a write makes
// progress, so "nothing" is checked per budget: a stall between budget and
// twice it ends the write) or has not taken all of b within overall.
func writeWithin(conn net.Conn, b []byte, budget, overall time.Duration) error {
	end := time.Now().Add(overall)
	for {
		d := time.Now().Add(budget)
		if d.After(end) {
			d = end
		}
		_ = conn.SetWriteDeadline(d)
		n, err := conn.Write(b)
		if err == nil {
			// No deadline left behind: writeNow writes without one.
			_ = conn.SetWriteDeadline(time.Time{})
			return nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || n == 0 || !time.Now().Before(end) {
			return err
		}
		b = b[n:]
	}
}

// wrote follows a complete write by a writer: the stream ends if its bell
// has, is queued again if another state came meanwhile, and is idle
// otherwise.
func (es *eventStream) wrote(done bool) {
	if done {
		es.end()
		return
	}
	es.mu.Lock()
	if es.closed || !es.due && !es.failure && !es.done {
		es.idle()
		return
	}
	es.mu.Unlock()
	es.w.queue(es) // still busy: to the back of the queue, after the others due
}

// reset makes the stream's close discard what its socket still holds
// (a TCP reset) rather than keep sending it to a client that reads none,
// when the connection offers that: through its descriptor (a *net.TCPConn
// and the connection limiter's wrapper give it; on unix systems), else
// through SetLinger; otherwise the connection is closed plainly.
func (es *eventStream) reset() {
	if es.raw != nil && lingerZero(es.raw) == nil {
		return
	}
	if l, ok := es.conn.(interface{ SetLinger(int) error }); ok {
		_ = l.SetLinger(0)
	}
}

// close ends the stream once: the bell is unsubscribed, the connection
// closed (ending watch and any write under way) and the slot given back,
// at once when the stream is idle; a busy one (queued for a writer, or
// being written) gives it back when the one holding it sees it closed
// (idle, end).
func (es *eventStream) close() {
	es.mu.Lock()
	if es.closed {
		es.mu.Unlock()
		return
	}
	es.closed = true
	busy := es.busy
	sub := es.sub
	es.sub = nil
	es.mu.Unlock()
	_ = es.conn.Close() // first: it ends a write under way
	if sub != nil {
		sub.Unsubscribe()
	}
	es.srv.untrack(es)
	if !busy {
		es.release()
	}
}

// writers is the server's fixed pool of event writers. A stream with an
// event due is queued once (eventStream.busy), and a stream closed while
// queued keeps its slot until a writer takes it from the queue, so the
// queue never holds more than the streams cap (limits.streams);
// each writer writes one stream's event at a time, at once or not at all
// (writeAtOnce), so a full socket never holds a writer, and a broadcast's
// writes to many streams run on several cores at once.
//
// Where io_uring is available (Linux; see internal/sockbatch) and not
// turned off (-write-each), each writer writes the streams waiting in the
// queue in batches: up to writeBatch events, each to its own socket, in
// one system call (see batch), with the same outcome per stream as its own
// write.
type writers struct {
	due   chan *eventStream // capacity: the streams cap
	stop  chan struct{}
	wg    sync.WaitGroup
	log   *slog.Logger
	batch bool              // write in io_uring batches where available
	rings []*sockbatch.Ring // the writers' rings (each writer's own), for their Kept gauge
}

// eventWriters is the number of writers: enough to keep every core
// writing while a few wait on the scheduler.
func eventWriters() int { return min(max(2*runtime.GOMAXPROCS(0), 2), 16) }

// startWriters starts the writers of a server of streams streams; batch
// asks for io_uring batches (each writer falls back to a write per stream
// when its ring cannot be set up, logged once). The rings' budgets run on
// clk (the bell's: virtual in tests); nil is the real clock.
func startWriters(streams int, log *slog.Logger, batch bool, clk clock.Clock) *writers {
	w := &writers{due: make(chan *eventStream, streams), stop: make(chan struct{}), log: log, batch: batch}
	for range eventWriters() {
		var ring *sockbatch.Ring
		if batch {
			var err error
			if ring, err = sockbatch.New(writeBatch, sockbatch.Options{Clock: clk, Logger: log}); err != nil && len(w.rings) == 0 {
				log.Info("bell: writing each stream with its own system call", "reason", err)
				batch = false // the others would fail alike
			}
		}
		if ring != nil {
			w.rings = append(w.rings, ring)
		}
		w.wg.Add(1)
		go w.run(ring)
	}
	if len(w.rings) > 0 {
		log.Debug("bell: writing events in io_uring batches", "writers", len(w.rings), "batch", writeBatch)
	}
	return w
}

// kept returns how many of the writers' io_uring sends the kernel still
// holds after they were cancelled (sockbatch.Ring.Kept: their buffers are
// kept alive until it gives them back); it should always be 0.
func (w *writers) kept() int {
	n := 0
	for _, r := range w.rings {
		n += r.Kept()
	}
	return n
}

// run writes the queued streams until the writers stop: in batches through
// ring, or one by one when ring is nil. The ring is closed when run ends.
func (w *writers) run(ring *sockbatch.Ring) {
	defer w.wg.Done()
	var buf bytes.Buffer
	var b *batch
	if ring != nil {
		b = &batch{ring: ring, log: w.log}
		defer b.close()
	}
	for {
		select {
		case es := <-w.due:
			if b == nil || !b.usable() {
				es.writeOut(&buf)
			} else {
				b.write(es, w.due)
			}
			if buf.Cap() > maxWriterBuffer {
				buf = bytes.Buffer{} // one huge event does not stay held
			}
		case <-w.stop:
			return
		}
	}
}

// queue hands es to a writer. It never waits: the queue has room for
// every stream holding a slot and holds each at most once.
func (w *writers) queue(es *eventStream) {
	select {
	case w.due <- es:
	default: // cannot happen (see writers); a stream is never dropped silently
		w.log.Error("bell: the writers' queue is full; closing the stream", "viewer", es.viewer)
		go es.end()
	}
}

// close stops the writers once every stream is closed (closeStreams), then
// gives back the slots of the closed streams still queued.
func (w *writers) close() {
	close(w.stop)
	w.wg.Wait()
	if n := w.kept(); n > 0 {
		w.log.Warn("bell: io_uring sends still held by the kernel as the writers stop; their buffers stay kept until it gives them back", "sends", n)
	}
	var buf bytes.Buffer
	for {
		select {
		case es := <-w.due:
			es.writeOut(&buf) // closed: it only gives the slot back
		default:
			return
		}
	}
}

// frameCache encodes bell events, sharing the work between streams: each
// notification is encoded once (per whether it is the viewer's own) and the
// encoding reused for every stream that shows it; and a state the bells
// share (notifications.BellState says when: every admin with nothing of
// their own gets the same state of the Admin notifications) is encoded
// once, from its unread count on, for every stream that owns none of it:
// an Admin notification seen by 10,000 admins is one encoding, each
// stream's event its head (the viewer) and that shared rest, copied.
//
// A change between two such states (see changeEvent) is encoded once the
// same way: a broadcast's event to 10,000 admins is one encoding of the
// notification added, each stream's event its head and that shared rest.
//
// It holds at most frameCacheBytes of item encodings and as much of state
// and of change encodings (and at most maxChanges changes), starting
// afresh when one is full; the latest shared state and change are read
// without a lock, so a broadcast's writers do not queue on one.
type frameCache struct {
	latest       atomic.Pointer[sharedState]  // the state encoded last
	latestChange atomic.Pointer[sharedChange] // the change encoded last

	mu          sync.Mutex
	items       map[itemKey][]byte
	itemBytes   int
	states      map[*notifications.Group]*sharedState // by the state's first group
	stateBytes  int
	changes     []*sharedChange // the most recent, oldest first; at most maxChanges
	changeBytes int             // their sizes
}

// frameCacheBytes bounds each of the cache's parts (items, states, changes).
const frameCacheBytes = 4 << 20

type itemKey struct {
	n   notifications.Notification
	own bool
}

// sharedState is a state's encoding from its unread count to the end of
// its event, as every stream that owns none of its notifications shows
// it.
type sharedState struct {
	key        *notifications.Group
	addressees []string // the distinct addressees of its notifications: a viewer among them owns some
	rest       []byte
}

// ownedBy reports whether viewer owns any of the state's notifications.
func (e *sharedState) ownedBy(viewer string) bool { return ownedBy(e.addressees, viewer) }

// bellEvent appends the "bell" event of viewer's state st to buf: the
// JSON of viewOf(viewer, st). viewerJSON is viewer as a JSON string.
func (c *frameCache) bellEvent(buf *bytes.Buffer, viewerJSON, viewer string, st notifications.BellState) {
	buf.WriteString("event: bell\ndata: {\"viewer\":")
	buf.WriteString(viewerJSON)
	buf.WriteString(`,"unread":`)
	if len(st.Groups) == 0 {
		c.rest(buf, viewer, st)
		return
	}
	key := &st.Groups[0]
	e := c.latest.Load()
	if e == nil || e.key != key {
		c.mu.Lock()
		e = c.states[key]
		c.mu.Unlock()
	}
	if e != nil && !e.ownedBy(viewer) {
		buf.Write(e.rest)
		return
	}
	start := buf.Len()
	c.rest(buf, viewer, st)
	if e != nil || ownAny(viewer, st.Groups) || buf.Len()-start > frameCacheBytes {
		return // a state of the viewer's own, not shared; or too large to keep
	}
	e = &sharedState{key: key, addressees: addresseesOf(st.Groups), rest: bytes.Clone(buf.Bytes()[start:])}
	c.mu.Lock()
	if c.states == nil || c.stateBytes+len(e.rest) > frameCacheBytes {
		c.states, c.stateBytes = make(map[*notifications.Group]*sharedState), 0
	}
	c.states[key] = e
	c.stateBytes += len(e.rest)
	c.mu.Unlock()
	c.latest.Store(e)
}

// rest appends the event of viewer's state st from its unread count on.
func (c *frameCache) rest(buf *bytes.Buffer, viewer string, st notifications.BellState) {
	buf.WriteString(strconv.Itoa(st.Unread))
	buf.WriteString(`,"groups":[`)
	for gi, g := range st.Groups {
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
			buf.Write(c.item(n, mesh.EqualNames(n.Addressee, viewer)))
		}
		buf.WriteString("]}")
	}
	buf.WriteString("]}\n\n")
}

// ownAny reports whether any of the notifications in groups is viewer's own.
func ownAny(viewer string, groups []notifications.Group) bool {
	for _, g := range groups {
		for _, n := range g.Items {
			if mesh.EqualNames(n.Addressee, viewer) {
				return true
			}
		}
	}
	return false
}

// addresseesOf returns the distinct addressees of the notifications in
// groups (a shared state's: usually one, Admin).
func addresseesOf(groups []notifications.Group) []string {
	var out []string
	for _, g := range groups {
		for _, n := range g.Items {
			if !slices.ContainsFunc(out, func(a string) bool { return mesh.EqualNames(a, n.Addressee) }) {
				out = append(out, n.Addressee)
			}
		}
	}
	return out
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
	b, err := json.Marshal(itemView{Notification: n, Addressee: n.Addressee, Own: own, Source: n.Source()})
	if err != nil {
		// Every field is a string, a bool or a time; kept for safety.
		b = []byte(fmt.Sprintf(`{"id":%q,"title":"(not encodable)"}`, n.ID))
	}
	size := len(b) + itemKeySize(n)
	if size > frameCacheBytes {
		return b // too large to keep
	}
	c.mu.Lock()
	if c.items == nil || c.itemBytes+size > frameCacheBytes {
		c.items, c.itemBytes = make(map[itemKey][]byte), 0
	}
	c.items[k] = b
	c.itemBytes += size
	c.mu.Unlock()
	return b
}

// itemKeySize is what an item's key holds beyond its encoding: the
// notification's strings.
func itemKeySize(n notifications.Notification) int {
	return len(n.ID) + len(n.Title) + len(n.Message) + len(n.Icon) + len(n.TargetPath) + len(n.Recipient) +
		len(n.Type) + len(n.CreatedBy) + len(n.MovedFrom) + len(n.Identity) + len(n.Addressee)
}

// writeString appends s as a JSON string, as encoding/json writes it.
func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s)
	buf.Write(b)
}
