package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/examples/bell/bellstate"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/notifications"
)

// promptly bounds, in real time, how long a reading admin may wait for a
// broadcast while other streams' sockets are full: well under
// eventWriteBudget, which a writer held by a full socket would wait.
const promptly = 3 * time.Second

// goroutinesIn counts the goroutines whose stacks mention fn.
func goroutinesIn(fn string) int {
	var dump bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&dump, 2) // a bytes.Buffer does not fail
	return strings.Count(dump.String(), fn)
}

// stuckClient opens an event stream as user over a socket with a small
// receive buffer and never reads it: its client is gone but its
// connection stays.
func stuckClient(t *testing.T, base, token string) {
	t.Helper()
	d := net.Dialer{Timeout: bound, Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = setSmallRcvBuf(fd)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	u, err := url.Parse(base)
	require.NoError(t, err)
	conn, err := d.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	req, err := http.NewRequest(http.MethodGet, base+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	require.NoError(t, req.Write(conn))
}

// Streams whose clients read nothing do not hold back the others, however
// many they are: more than the server has writers, each with its socket
// full. Every reading admin gets every broadcast promptly (within 3 s)
// while the stuck streams' sockets fill, and after: a writer writes what
// a socket takes at once, then the rest of the event waits on a goroutine of
// that stream's own, which holds one event's rest at most (a newer state
// replaces an older one not yet written). A stuck stream is closed once its
// socket has taken nothing for eventWriteBudget, giving its slot back.
//
// Negative control: with writeNow waiting on a full socket (its raw
// write waiting for the socket on EAGAIN instead of handing the rest on),
// the reading admins miss the 3 s bound once the stuck sockets are full
// (seen: broadcast b56); before writeNow, with writeAtOnce set to
// eventWriteBudget, likewise (b35).
//
// Run both ways the writers write: in io_uring batches (where a socket
// taking part of an event, or none, is the send's result) and a write per
// stream (-write-each). Negative control for the batches: with batch.result
// writing a full socket's rest on the writer (writeWithin, as a blocking
// write would) instead of handing it on, the reading admins miss the 3 s
// bound once the stuck sockets are full, as they did when run so.
func TestStreamsWhoseClientsReadNothingDoNotHoldBackTheOthers(t *testing.T) {
	forEachWriteMode(t, func(t *testing.T, setup func(*server)) { streamsReadingNothing(t, setup) })
}

func streamsReadingNothing(t *testing.T, setup func(*server)) {
	nStuck, nReading := eventWriters()+2, 6
	base, srv := serveUsersWith(t, 0, nStuck+nReading, setup)
	_, admins := loadConfig{admins: nStuck + nReading}.generated()
	for _, a := range admins[:nStuck] {
		stuckClient(t, base, srv.accounts.tokens[a])
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	// The reading admins apply their events (bellstate) without building
	// a view of each state: theirs grow to megabytes here.
	reading := make([]<-chan bellstate.Event, nReading)
	states := make([]bellstate.State, nReading)
	for i, a := range admins[nStuck:] {
		reading[i] = rawStream(t, signedIn(srv, tr, a), base+"/events")
		require.NoError(t, states[i].Apply(nextState(t, reading[i]), nil))
	}
	require.Eventually(t, func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.open == nStuck+nReading
	}, bound, 5*time.Millisecond, "every stream open")

	// Each broadcast adds a 48 KB notification, each event (the change:
	// that notification) 48 KB, until the stuck sockets are full.
	message := strings.Repeat("x", 48<<10)
	sender := signedIn(srv, tr, demoAdmin)
	broadcast := func(i int) {
		t.Helper()
		title := fmt.Sprint("b", i)
		status, body := post(t, sender, base+"/send", url.Values{"title": {title}, "message": {message}, "to": {notifications.Admin}})
		require.Equal(t, http.StatusOK, status, "%v", body)
		deadline := time.NewTimer(promptly)
		defer deadline.Stop()
		for j, events := range reading {
			for states[j].Find(title) == nil {
				select {
				case ev, ok := <-events:
					require.True(t, ok, "reading admin %d: the stream ended", j)
					require.NoError(t, states[j].Apply(ev, nil), "reading admin %d", j)
				case <-deadline.C:
					require.FailNow(t, fmt.Sprintf("reading admin %d: broadcast %s not seen within %s", j, title, promptly))
				}
			}
		}
	}
	full := 0
	for i := 0; i < 150 && full < nStuck; i++ { // a reading stream briefly slow may add one
		broadcast(i)
		full = goroutinesIn(".(*eventStream).writeOwn(")
	}
	require.GreaterOrEqual(t, full, nStuck, "every stuck stream's socket filled (its rest waits on its own goroutine)")
	for i := 150; i < 153; i++ {
		broadcast(i) // with every stuck socket full
	}
	assert.Zero(t, goroutinesIn(".(*eventStream).writeOut(")+goroutinesIn("main.(*writers).queue(")+goroutinesIn("main.(*batch).flush("), "no writer waits on a stream")

	require.Eventually(t, func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.open == nReading
	}, eventWriteBudget+bound, 10*time.Millisecond, "the stuck streams are closed after eventWriteBudget")
	assert.Zero(t, goroutinesIn(".(*eventStream).writeOwn("))
	broadcast(153) // the readers still get theirs
}

// A stream is tracked before anything is written to it, so that ending
// the streams (a shutdown) ends one whose first bytes wait on its client
// too: startStream returns, its slot given back, as soon as closeStreams
// runs. The client here is an in-memory pipe that reads nothing (a TCP
// socket would take a stream's first bytes whatever its client does).
// Negative control: before, the first event was written, within
// eventWriteBudget (10 s), before the stream was tracked; with that order
// back this test fails (the stream is not tracked while its write waits,
// and closeStreams does not end it).
func TestEndingTheStreamsEndsOneStillWritingItsFirstEvent(t *testing.T) {
	_, srv := serveUsers(t, 1, 0)
	release, ok := srv.takeStream("user00001")
	require.True(t, ok)
	server, client := net.Pipe()
	defer client.Close()
	started := make(chan struct{})
	go func() {
		defer close(started)
		srv.startStream(server, http.Header{}, "user00001", release)
	}()
	require.Eventually(t, func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.streams) == 1
	}, promptly, time.Millisecond, "the stream is tracked while its first write waits")
	srv.closeStreams()
	select {
	case <-started:
	case <-time.After(promptly):
		t.Fatal("startStream still writes its first event after the streams were ended")
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	assert.Zero(t, srv.open, "its slot is given back")
}

// The events of a state the admins share are one encoding: after the
// first, an admin's event costs no allocation and no encoding, only its
// head and a copy. The control: a state with a notification of the
// viewer's own is encoded afresh for each event (allocations > 0), as
// every state was before the shared encodings.
func TestASharedStatesEventIsEncodedOnceForEveryStream(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	var items []notifications.Notification
	for i := range 50 {
		items = append(items, notifications.Notification{ID: fmt.Sprint(i), Title: fmt.Sprint("n", i), Addressee: notifications.Admin, CreatedAt: at})
	}
	shared := notifications.BellState{Unread: 50, Groups: []notifications.Group{{Items: items}}}
	own := notifications.BellState{Unread: 1, Groups: []notifications.Group{{Items: []notifications.Notification{
		{ID: "o", Title: "mine", Addressee: "admin00002", CreatedAt: at}}}}}
	var c frameCache
	var buf bytes.Buffer
	buf.Grow(64 << 10)
	c.bellEvent(&buf, `"admin00001"`, "admin00001", shared)
	sharedAllocs := testing.AllocsPerRun(100, func() {
		buf.Reset()
		c.bellEvent(&buf, `"admin00002"`, "admin00002", shared)
	})
	assert.Zero(t, sharedAllocs, "a shared state's event: no allocation")
	ownAllocs := testing.AllocsPerRun(100, func() {
		buf.Reset()
		c.bellEvent(&buf, `"admin00002"`, "admin00002", own)
	})
	assert.Positive(t, ownAllocs, "control: a state of the viewer's own is encoded for the viewer")

	// So is a change between two shared states (a broadcast): the
	// notification added, encoded once, whatever the state's size.
	next := notifications.BellState{Unread: 51, Groups: []notifications.Group{{Items: append([]notifications.Notification{
		{ID: "new", Title: "added", Addressee: notifications.Admin, CreatedAt: at.Add(time.Second)}}, items...)}}}
	buf.Reset()
	c.changeEvent(&buf, `"admin00001"`, "admin00001", shared, next)
	assert.Less(t, buf.Len(), 512, "the change holds the notification added, not the 51: %s", buf.String())
	changeAllocs := testing.AllocsPerRun(100, func() {
		buf.Reset()
		c.changeEvent(&buf, `"admin00002"`, "admin00002", shared, next)
	})
	assert.Zero(t, changeAllocs, "a shared change's event: no allocation")
	ownNext := notifications.BellState{Unread: 2, Groups: []notifications.Group{{Items: append([]notifications.Notification{
		{ID: "o2", Title: "mine too", Addressee: "admin00002", CreatedAt: at.Add(time.Second)}}, own.Groups[0].Items...)}}}
	ownChangeAllocs := testing.AllocsPerRun(100, func() {
		buf.Reset()
		c.changeEvent(&buf, `"admin00002"`, "admin00002", own, ownNext)
	})
	assert.Positive(t, ownChangeAllocs, "control: a change of the viewer's own is worked out for the viewer")
}

// The encodings are bounded by bytes, not by count: notifications of
// 64 KB each, 200 of them (12.8 MB), leave at most frameCacheBytes (4 MB)
// of item encodings and as much of state encodings, and every event is
// still right. Negative control: the cache before held up to 8,192
// encodings whatever their size (here all 200, 12.8 MB of items, and 16
// states of up to 200 × 64 KB each).
func TestTheEncodingsAreBoundedByBytes(t *testing.T) {
	big := strings.Repeat("y", 64<<10)
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	var c frameCache
	var all []notifications.Notification
	for i := range 200 {
		all = append([]notifications.Notification{{ID: fmt.Sprint(i), Title: fmt.Sprint("big", i), Message: big,
			Addressee: notifications.Admin, CreatedAt: at.Add(time.Duration(i) * time.Second)}}, all...)
		if len(all) > 8 {
			all = all[:8]
		}
		st := notifications.BellState{Unread: len(all), Groups: []notifications.Group{{Items: all}}}
		var buf bytes.Buffer
		c.bellEvent(&buf, `"ops"`, "ops", st)
		require.True(t, strings.HasSuffix(buf.String(), "\n\n"))
		assert.Contains(t, buf.String(), fmt.Sprintf(`"title":"big%d"`, i))
		c.mu.Lock()
		items, states := c.itemBytes, c.stateBytes
		c.mu.Unlock()
		require.LessOrEqual(t, items, frameCacheBytes, "after %d", i)
		require.LessOrEqual(t, states, frameCacheBytes, "after %d", i)
	}
	var fresh bytes.Buffer
	st := notifications.BellState{Unread: len(all), Groups: []notifications.Group{{Items: all}}}
	c.bellEvent(&fresh, `"ops"`, "ops", st)
	var want bytes.Buffer
	(&frameCache{}).bellEvent(&want, `"ops"`, "ops", st)
	assert.Equal(t, want.String(), fresh.String(), "an event from the bounded cache is the event encoded afresh")
}

// pipeStream makes a stream of s on one end of a net.Pipe (no buffer: a
// write waits for the client's read), with the writers w, not started, so
// the test plays the writer; it returns the client's end.
func pipeStream(t *testing.T, s *server, w *writers, viewer string, release func()) (*eventStream, net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	es := &eventStream{srv: s, viewer: viewer, viewerJSON: `"` + viewer + `"`, conn: a, release: release, w: w}
	s.mu.Lock()
	s.streams[es] = struct{}{}
	s.mu.Unlock()
	return es, b
}

// A stream closed while it waits in the writers' queue keeps its slot until
// a writer takes it from the queue: open and queued streams together never
// pass the streams cap, the queue's size, so churn at the cap never
// overflows the queue and a healthy new stream is never closed for it.
//
// Negative control: with close giving the slot back at once, busy or not
// (as at 7289de3), a third stream opens while the closed one is still
// queued, its first event finds the queue full and the stream is closed
// ("the writers' queue is full" logged): this test fails, as it did when
// run so.
func TestAStreamClosedWhileQueuedKeepsItsSlotUntilAWriterTakesIt(t *testing.T) {
	var logs testkit.SyncBuffer
	s := &server{log: slog.New(slog.NewTextHandler(&logs, nil)), streams: map[*eventStream]struct{}{}, viewers: map[string]int{}}
	s.lim.streams, s.lim.streamsPerViewer = 2, 2
	w := &writers{due: make(chan *eventStream, s.lim.streams), stop: make(chan struct{}), log: s.log}
	open := func(v string) (*eventStream, bool) {
		release, ok := s.takeStream(v)
		if !ok {
			return nil, false
		}
		es, _ := pipeStream(t, s, w, v, release)
		return es, true
	}
	e1, ok1 := open("a")
	e2, ok2 := open("b")
	require.True(t, ok1 && ok2)
	e1.put(notifications.BellState{Unread: 1})
	e2.put(notifications.BellState{Unread: 1})
	e1.close() // its client went away while it was queued

	if e3, ok := open("c"); ok { // only without the fix
		e3.put(notifications.BellState{Unread: 1})
	}
	assert.NotContains(t, logs.String(), "queue is full", "no stream was closed for a full queue") // queue logs before it returns

	// A writer takes the closed stream's entry: its slot comes back, and
	// the next stream opens.
	(<-w.due).writeOut(new(bytes.Buffer))
	e3, ok := open("c")
	require.True(t, ok, "the closed stream's slot came back once a writer took its entry")
	e3.put(notifications.BellState{Unread: 1})
	assert.NotContains(t, logs.String(), "queue is full")
	assert.Len(t, w.due, 2, "e2 and e3 queued, e1 gone")
	e2.close()
	e3.close()
	for range 2 {
		(<-w.due).writeOut(new(bytes.Buffer))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Zero(t, s.open, "every slot came back")
}

// readEvent reads one event ("...\n\n") from c within promptly.
func readEvent(c net.Conn) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(promptly))
	var got []byte
	var b [256]byte
	for !bytes.HasSuffix(got, []byte("\n\n")) {
		n, err := c.Read(b[:])
		got = append(got, b[:n]...)
		if err != nil {
			return string(got), err
		}
	}
	return string(got), nil
}

// Once a stream's socket has taken an event slowly, its next event is
// written by a goroutine of the stream's own, not queued for a writer: a
// client whose socket is full but still read costs a writer writeAtOnce
// once, not on every event, so many such clients do not delay the fast
// streams by writeAtOnce each per event; nor does one event taken at once
// hand it back to the writers.
//
// Negative control: with every event queued for the writers (kick ignoring
// slow, as at 7289de3), the second event waits in the writers' queue (the
// writers are not started here) and this test fails, as it did when run
// so; with slowQuickEvents 1, the third event does, likewise.
func TestASlowlyReadStreamsNextEventIsWrittenByItsOwnGoroutine(t *testing.T) {
	s := &server{log: discard(), streams: map[*eventStream]struct{}{}, viewers: map[string]int{}}
	w := &writers{due: make(chan *eventStream, 1), stop: make(chan struct{}), log: s.log}
	es, client := pipeStream(t, s, w, "a", func() {})
	defer es.close()

	es.put(notifications.BellState{Unread: 1})
	require.Len(t, w.due, 1)
	(<-w.due).writeOut(new(bytes.Buffer)) // the client reads nothing yet: the writer gives up after writeAtOnce
	ev, err := readEvent(client)
	require.NoError(t, err)
	assert.Contains(t, ev, `"unread":1`)
	require.Eventually(t, func() bool { // the stream's goroutine has written the event and ended
		es.mu.Lock()
		defer es.mu.Unlock()
		return !es.busy
	}, promptly, time.Millisecond)

	es.put(notifications.BellState{Unread: 2})
	ev, err = readEvent(client)
	assert.NoError(t, err, "the second event reached the slow client without a writer")
	assert.Contains(t, ev, `"unread":2`)
	assert.Empty(t, w.due, "the second event was not queued for a writer")

	// The second was taken at once, but one such event does not make the
	// stream fast again (slowQuickEvents in a row do): the third goes the
	// same way.
	require.Eventually(t, func() bool {
		es.mu.Lock()
		defer es.mu.Unlock()
		return !es.busy
	}, promptly, time.Millisecond)
	es.put(notifications.BellState{Unread: 3})
	ev, err = readEvent(client)
	assert.NoError(t, err, "the third event reached the client without a writer")
	assert.Contains(t, ev, `"unread":3`)
	assert.Empty(t, w.due)
}

// writeWithin re-arms its deadline whenever the connection takes bytes: a
// client trickling an event in over several budgets gets it whole, one
// that takes nothing for a budget is cut off after it, and one trickling
// past the overall budget is cut off there.
//
// Negative control: with one deadline of budget for the whole write (as
// writeRest had at 7289de3), the trickling client's write fails with
// os.ErrDeadlineExceeded and this test fails, as it did when run so.
func TestAWriteIsCutOffWhenItsClientTakesNothingForTheBudgetNotWhileItTrickles(t *testing.T) {
	// Real time (net.Conn deadlines). The trickle's 30 ms is far inside
	// budget, so a loaded machine that delays it does not cut it off; a
	// write cut off at its overall budget is told by its error, not by a
	// tight bound on the time taken (300 ms failed when a wake-up lagged).
	const budget, overall = 250 * time.Millisecond, 2 * time.Second
	trickle := func(c net.Conn, every time.Duration, stop <-chan struct{}) {
		var b [10]byte
		for {
			select {
			case <-stop:
				return
			case <-time.After(every):
			}
			if _, err := c.Read(b[:]); err != nil {
				return
			}
		}
	}
	msg := bytes.Repeat([]byte("x"), 100) // 10 reads of 10 bytes, one each 30 ms: 300 ms at least

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	stop := make(chan struct{})
	defer close(stop)
	go trickle(b, 30*time.Millisecond, stop)
	start := time.Now()
	assert.NoError(t, writeWithin(a, msg, budget, overall), "a trickling client gets the whole event")
	assert.Greater(t, time.Since(start), budget, "the write outlasted one budget")

	c, d := net.Pipe()
	defer c.Close()
	defer d.Close()
	start = time.Now()
	err := writeWithin(c, msg, budget, overall)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "a client taking nothing is cut off")
	assert.Less(t, time.Since(start), overall, "after the budget, not the overall bound")

	e, f := net.Pipe()
	defer e.Close()
	defer f.Close()
	stop2 := make(chan struct{})
	defer close(stop2)
	go trickle(f, 30*time.Millisecond, stop2)
	start = time.Now()
	err = writeWithin(e, msg, budget, 150*time.Millisecond)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "a trickle past the overall budget is cut off (it takes 300 ms at least)")
	assert.Less(t, time.Since(start), overall, "at the overall budget, not a hang")
}
