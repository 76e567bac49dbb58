package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/examples/bell/bellstate"
	"github.com/meshrx/meshrx/internal/sockbatch"
	"github.com/meshrx/meshrx/internal/sockbatch/sockbatchtest"
	"github.com/meshrx/meshrx/notifications"
)

// forEachWriteMode runs f with the server's writers writing in io_uring
// batches (the default; where io_uring is unavailable they fall back, and
// the test says so, or fails with MESHRX_REQUIRE_IOURING=1) and with a
// write per stream (-write-each), the fallback, which runs whether or not
// io_uring works here.
func forEachWriteMode(t *testing.T, f func(t *testing.T, setup func(*server))) {
	t.Run("io_uring batches", func(t *testing.T) {
		if !sockbatchtest.Available(t) {
			t.Log("the writers fall back to a write per stream")
		}
		f(t, nil)
	})
	t.Run("a write per stream (-write-each)", func(t *testing.T) {
		f(t, func(s *server) { s.writeEach = true })
	})
}

// ioUringWorks reports whether a ring can be set up here.
func ioUringWorks() bool {
	r, err := sockbatch.New(1, sockbatch.Options{})
	if err != nil {
		return false
	}
	r.Close()
	return true
}

// recordedLog is a slog handler keeping the messages logged.
type recordedLog struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recordedLog) Enabled(context.Context, slog.Level) bool { return true }
func (r *recordedLog) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	return nil
}
func (r *recordedLog) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recordedLog) WithGroup(string) slog.Handler      { return r }

func (r *recordedLog) has(msg string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if m == msg {
			return true
		}
	}
	return false
}

// An Admin broadcast reaches every admin's stream, each event whole, in
// order and addressed to its own viewer, when the writers write in io_uring
// batches (more streams than one batch holds) and when they write each
// stream with its own system call; streams whose clients reset their
// connections before it end by themselves, and the others are not
// affected. Where io_uring works the batches are in use (logged), and
// -write-each turns them off (the seam users have).
//
// Negative control: with batch.hold giving each send the descriptor of the
// stream after it (events crossed between sockets), the states do not
// apply (an event's id does not follow its stream's, or the viewer is
// another's) and this test fails, as it did when run so.
func TestABroadcastReachesEveryStreamWhetherBatchedOrWrittenOneByOne(t *testing.T) {
	forEachWriteMode(t, func(t *testing.T, setup func(*server)) {
		const nAdmins, nGone = 300, 20
		logged := &recordedLog{}
		base, srv := serveUsersWith(t, 0, nAdmins, func(s *server) {
			s.log = slog.New(logged)
			s.lim.streams += nGone
			if setup != nil {
				setup(s)
			}
		})
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		_, admins := loadConfig{admins: nAdmins}.generated()
		events := make([]<-chan bellstate.Event, nAdmins)
		states := make([]bellstate.State, nAdmins)
		for i, a := range admins {
			events[i] = rawStream(t, signedIn(srv, tr, a), base+"/events")
			require.NoError(t, states[i].Apply(nextState(t, events[i]), nil))
			require.Equal(t, a, states[i].Viewer())
		}
		batched := !srv.writeEach && ioUringWorks()
		assert.Equal(t, batched, logged.has("bell: writing events in io_uring batches"), "the writers batch exactly when they can and may")
		assert.Equal(t, !batched && !srv.writeEach, logged.has("bell: writing each stream with its own system call"))

		// nGone more streams of the same admins, whose clients reset
		// their connections: those streams end, no other does.
		resetClients(t, base, srv, admins[:nGone])
		sender := signedIn(srv, tr, demoAdmin)
		for b := range 3 {
			title := fmt.Sprint("broadcast ", b)
			status, body := post(t, sender, base+"/send", url.Values{"title": {title}, "to": {notifications.Admin}})
			require.Equal(t, http.StatusOK, status, "%v", body)
			for i := range admins {
				for states[i].Find(title) == nil {
					require.NoError(t, states[i].Apply(nextState(t, events[i]), nil), "admin %d, %s", i, title)
				}
				require.Equal(t, admins[i], states[i].Viewer())
			}
		}
	})
}

// resetClients opens a stream for each of users and resets its connection
// (SO_LINGER 0) once the stream is answered; it returns when the server
// has closed them all, and only them.
func resetClients(t *testing.T, base string, srv *server, users []string) {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	srv.mu.Lock()
	before := srv.open
	srv.mu.Unlock()
	conns := make([]*net.TCPConn, len(users))
	for i, user := range users {
		c, err := net.DialTimeout("tcp", u.Host, bound)
		require.NoError(t, err)
		conns[i] = c.(*net.TCPConn)
		req, err := http.NewRequest(http.MethodGet, base+"/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+srv.accounts.tokens[user])
		require.NoError(t, req.Write(c))
		_ = c.SetReadDeadline(time.Now().Add(bound))
		b := make([]byte, 1)
		_, err = c.Read(b)
		require.NoError(t, err, "the stream's answer")
	}
	require.Eventually(t, func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.open == before+len(users)
	}, bound, 5*time.Millisecond, "the streams to reset are open")
	for _, c := range conns {
		_ = c.SetLinger(0)
		_ = c.Close()
	}
	require.Eventually(t, func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.open == before
	}, bound, 5*time.Millisecond, "the reset streams are closed, and only they")
}

// -write-each is a flag of the bell, off by default.
func TestWriteEachIsAFlagOffByDefault(t *testing.T) {
	var errOut strings.Builder
	c, err := parseFlags(nil, &errOut)
	require.NoError(t, err)
	assert.False(t, c.writeEach)
	c, err = parseFlags([]string{"-write-each"}, &errOut)
	require.NoError(t, err)
	assert.True(t, c.writeEach)
}
