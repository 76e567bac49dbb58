package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
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
// while the stuck streams' sockets fill, and after: a writer gives a full
// socket writeAtOnce, then the rest of the event waits on a goroutine of
// that stream's own, which holds one event's rest at most (a newer state
// replaces an older one not yet written). A stuck stream is closed once its
// socket has taken nothing for eventWriteBudget, giving its slot back.
//
// Negative control: with writeAtOnce set to eventWriteBudget (a writer
// waiting on a full socket as long as it may), the reading admins miss the
// 3 s bound once the stuck sockets are full (seen: broadcast b35).
func TestStreamsWhoseClientsReadNothingDoNotHoldBackTheOthers(t *testing.T) {
	nStuck, nReading := eventWriters()+2, 6
	base, srv := serveUsers(t, 0, nStuck+nReading)
	_, admins := loadConfig{admins: nStuck + nReading}.generated()
	for _, a := range admins[:nStuck] {
		stuckClient(t, base, srv.accounts.tokens[a])
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	reading := make([]*stream, nReading)
	for i, a := range admins[nStuck:] {
		reading[i] = openStream(t, signedIn(srv, tr, a), base+"/events")
		reading[i].nextBell(t)
	}
	require.Eventually(t, func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.open == nStuck+nReading
	}, bound, 5*time.Millisecond, "every stream open")

	// Each broadcast adds a 4 KB notification: the events grow until the
	// stuck sockets are full.
	message := strings.Repeat("x", 4096)
	sender := signedIn(srv, tr, demoAdmin)
	broadcast := func(i int) {
		t.Helper()
		title := fmt.Sprint("b", i)
		status, body := post(t, sender, base+"/send", url.Values{"title": {title}, "message": {message}, "to": {notifications.Admin}})
		require.Equal(t, http.StatusOK, status, "%v", body)
		deadline := time.NewTimer(promptly)
		defer deadline.Stop()
		for j, s := range reading {
			for found := false; !found; {
				select {
				case ev, ok := <-s.events:
					require.True(t, ok, "reading admin %d: the stream ended", j)
					found = ev.name == "bell" && has(title)(ev.data)
				case <-deadline.C:
					require.FailNow(t, fmt.Sprintf("reading admin %d: broadcast %s not seen within %s", j, title, promptly))
				}
			}
		}
	}
	full := 0
	for i := 0; i < 150 && full < nStuck; i++ {
		broadcast(i)
		full = goroutinesIn(".(*eventStream).writeRest(")
	}
	require.Equal(t, nStuck, full, "every stuck stream's socket filled (its rest waits on its own goroutine)")
	for i := 150; i < 153; i++ {
		broadcast(i) // with every stuck socket full
	}
	assert.Zero(t, goroutinesIn(".(*eventStream).writeOut(")+goroutinesIn("main.(*writers).queue("), "no writer waits on a stream")

	require.Eventually(t, func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.open == nReading
	}, eventWriteBudget+bound, 10*time.Millisecond, "the stuck streams are closed after eventWriteBudget")
	assert.Zero(t, goroutinesIn(".(*eventStream).writeRest("))
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
