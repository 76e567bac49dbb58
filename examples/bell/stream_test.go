package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/notifications"
)

// serveUsers serves a bell with the demo users plus nUsers generated users
// and nAdmins generated global admins (as the load-run flags make them),
// with caps above their streams, until the test ends.
func serveUsers(t *testing.T, nUsers, nAdmins int) (string, *server) {
	t.Helper()
	return serveUsersWith(t, nUsers, nAdmins, nil)
}

// serveUsersWith is serveUsers with setup called on the server before it
// serves (nil: none).
func serveUsersWith(t *testing.T, nUsers, nAdmins int, setup func(*server)) (string, *server) {
	t.Helper()
	store, err := memstore.New(memstore.Options{})
	require.NoError(t, err)
	load := loadConfig{users: nUsers, admins: nAdmins}
	users, admins := load.generated()
	adm := demoAdmins{demoAdmin: true}
	for _, a := range admins {
		adm[a] = true
	}
	svc := &notifications.Service{Mesh: store, Clock: clock.New(), Admins: adm}
	require.NoError(t, seed(t.Context(), svc))
	accts, err := newAccounts(append(append(append([]string{}, demoUsers...), users...), admins...))
	require.NoError(t, err)
	srv := newServer(svc, accts, discard())
	srv.lim.streams, srv.lim.conns = nUsers+nAdmins+8, 2*(nUsers+nAdmins)+64
	if setup != nil {
		setup(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, srv, discard()) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(bound):
			t.Error("the server did not shut down within the bound")
		}
		_ = store.Close()
	})
	return "http://" + ln.Addr().String(), srv
}

// nextBell returns the very next "bell" event of s, whatever it shows.
func (s *stream) nextBell(t *testing.T) bellView {
	t.Helper()
	return decodeBell(t, s.next(t, "bell", func(string) bool { return true }).data)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func signedIn(srv *server, tr http.RoundTripper, user string) *http.Client {
	return &http.Client{Transport: bearer{token: srv.accounts.tokens[user], next: tr}, Timeout: bound}
}

// Each of 100 admins' streams shows an Admin notification in exactly one
// event, the next after it is sent, and a second in the one after that;
// no viewer's stream shows either: each viewer's next event after its
// first is the one with a notification of its own, sent after both.
// The admins' streams are the positive control of the viewers': the same
// server and the same sends, differing only in who is a global admin.
func TestAnAdminNotificationReachesEveryAdminStreamOnceAndNoViewerStream(t *testing.T) {
	const nUsers, nAdmins = 100, 100
	base, srv := serveUsers(t, nUsers, nAdmins)
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	users, admins := loadConfig{users: nUsers, admins: nAdmins}.generated()
	open := func(names []string) []*stream {
		out := make([]*stream, len(names))
		for i, u := range names {
			out[i] = openStream(t, signedIn(srv, tr, u), base+"/events")
			require.Equal(t, http.StatusOK, out[i].status, u)
		}
		for _, s := range out {
			s.nextBell(t)
		}
		return out
	}
	adminStreams, userStreams := open(admins), open(users)
	send := func(title, to string) {
		t.Helper()
		status, body := post(t, signedIn(srv, tr, demoAdmin), base+"/send", url.Values{"title": {title}, "to": {to}})
		require.Equal(t, http.StatusOK, status, "%v", body)
	}

	send("broadcast", notifications.Admin)
	for i, s := range adminStreams {
		assert.NotNil(t, s.nextBell(t).find("broadcast"), "admin %d: the event after the send shows it", i)
	}
	send("second", notifications.Admin)
	for i, s := range adminStreams {
		v := s.nextBell(t)
		assert.NotNil(t, v.find("second"), "admin %d: the next event shows the second, not the first again", i)
		assert.False(t, v.find("broadcast").Own, "an Admin notification is no admin's own")
	}
	for i, s := range userStreams {
		send("own", users[i])
		v := s.nextBell(t)
		require.NotNil(t, v.find("own"), "viewer %d", i)
		assert.Nil(t, v.find("broadcast"), "viewer %d must not see the Admin notifications", i)
		assert.Nil(t, v.find("second"), "viewer %d must not see the Admin notifications", i)
	}
}

// An idle event stream holds no net/http handler goroutine and no
// background read of net/http's: the connection is taken over once the
// stream is answered, and one watch goroutine per stream (the positive
// control: the count sees the server's goroutines) notices a client going
// away. Negative control: before, each idle stream held net/http's
// conn.serve goroutine (in the handler) and its backgroundRead, 2 × 50
// here.
func TestAnIdleStreamHoldsNoHandlerGoroutine(t *testing.T) {
	const n = 50
	base, srv := serveUsers(t, n, 0)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	users, _ := loadConfig{users: n}.generated()
	streams := make([]*stream, n)
	for i, u := range users {
		streams[i] = openStream(t, signedIn(srv, tr, u), base+"/events")
	}
	for _, s := range streams {
		s.nextBell(t)
	}
	// A stream's first event can reach its client before its handler has
	// returned from taking the connection over, so the count is awaited
	// (bounded); a handler that stayed would never leave it.
	var stacks string
	settled := func() bool {
		var dump bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&dump, 2) // a bytes.Buffer does not fail
		stacks = dump.String()
		return strings.Count(stacks, ".(*eventStream).watch(") == n &&
			strings.Count(stacks, "net/http.(*conn).serve(") == 0 &&
			strings.Count(stacks, "net/http.(*connReader).backgroundRead(") == 0
	}
	if !settled() {
		assert.Eventually(t, settled, bound, 5*time.Millisecond)
	}
	assert.Equal(t, n, strings.Count(stacks, ".(*eventStream).watch("), "one watch per stream")
	assert.Zero(t, strings.Count(stacks, "net/http.(*conn).serve("), "no handler goroutine")
	assert.Zero(t, strings.Count(stacks, "net/http.(*connReader).backgroundRead("), "no net/http read")

	// A client going away ends its stream and gives its slot back.
	streams[0].cancel()
	streams[0].ended(t)
	require.Eventually(t, func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.open == n-1 && len(srv.streams) == n-1
	}, bound, 5*time.Millisecond)
}

// A bell event, whether encoded afresh or from the shared encodings, is
// the JSON of the viewer's view of the state: the same state shown to two
// viewers differs where it is one's own (the negative control: a cache
// keyed without the viewer would hand bob alice's "own").
func TestABellEventIsTheJSONOfItsViewFreshOrShared(t *testing.T) {
	at := time.Date(2026, 12, 1, 22, 0, 0, 123, time.UTC)
	own := notifications.Notification{ID: "1", Title: "mine <b>", TargetPath: "acme/x", Addressee: "alice", CreatedAt: at}
	adm := notifications.Notification{ID: "2", Title: "for admins", Addressee: notifications.Admin, CreatedAt: at.Add(-time.Second), IsRead: true}
	mixed := notifications.BellState{Unread: 1, Groups: []notifications.Group{
		{Source: "acme/x", Items: []notifications.Notification{own}},
		{Source: "", Items: []notifications.Notification{adm}},
	}}
	shared := notifications.BellState{Groups: []notifications.Group{{Source: "", Items: []notifications.Notification{adm}}}}
	var c frameCache
	for round := range 2 { // the second round is served from the encodings of the first
		for _, viewer := range []string{"alice", "bob", "ops"} {
			for _, st := range []notifications.BellState{mixed, shared} {
				var buf bytes.Buffer
				c.bellEvent(&buf, jsonString(viewer), viewer, st)
				want, err := json.Marshal(viewOf(viewer, st))
				require.NoError(t, err)
				assert.Equal(t, "event: bell\ndata: "+string(want)+"\n\n", buf.String(), "round %d, viewer %s", round, viewer)
			}
		}
	}
	var a, b bytes.Buffer
	c.bellEvent(&a, `"alice"`, "alice", mixed)
	c.bellEvent(&b, `"bob"`, "bob", mixed)
	assert.Contains(t, a.String(), `"own":true`)
	assert.NotContains(t, b.String(), `"own":true`)
	assert.NotEqual(t, fmt.Sprint(a.String()), b.String())
}
