//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/examples/bell/bellstate"
	"github.com/meshrx/meshrx/internal/sockbatch/sockbatchtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The load program, run against the real (secured) bell at a small size,
// starts it with the load-run flags, signs every stream in as its own user
// from the tokens file, times every delivery and prints the summary line.
// A stream the bell refuses fails the run with the viewer and the status:
// the negative controls are the same stream without its token (401, what
// every stream got before bellload signed in) and with another user's
// token (403).
func TestALoadRunAgainstTheRealBellPrintsItsSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the bell")
	}
	c := config{viewers: 30, admins: 5, sends: 10, broadcasts: 2, dial: 8, readers: 2, bound: time.Minute, pkg: "../bell"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := startBell(ctx, c)
	require.NoError(t, err)
	defer srv.stop()
	info, err := os.Stat(filepath.Join(srv.dir, "tokens"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the tokens file is its owner's only")

	var out bytes.Buffer
	require.NoError(t, measure(ctx, srv, c, &out))
	assert.Regexp(t, regexp.MustCompile(`(?m)^summary: viewers=30 admins=5 rss_mb=[1-9][0-9.]* deliver_p50_ms=[0-9.]+ deliver_p99_ms=[0-9.]+ broadcast_p50_ms=[0-9.]+ broadcast_p99_ms=[0-9.]+$`), out.String())
	assert.NotContains(t, out.String(), "broadcast_p99_ms=0.00", "the broadcasts were timed")

	client := &http.Client{}
	defer client.CloseIdleConnections()
	refused := func(s *stream) error { return s.open(ctx, srv.base, c.bound) }
	ok := srv.stream("user00001")
	require.NotEmpty(t, ok.token)
	err = refused(&stream{viewer: "user00001", fd: -1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stream of user00001: status 401", "negative control: no token")
	err = refused(&stream{viewer: "user00001", token: srv.tokens["user00002"], fd: -1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stream of user00001: status 403", "negative control: another user's token")
	_, err = timeDelivery(ctx, client, srv.base, srv.tokens["user00001"], "not an admin", adminAddressee, nil, 0, 0, c.bound)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "403", "only a global admin sends to Admin")
}

// itemJSON is a notification as the bell's stream shows an admin one
// bellload sent.
func itemJSON(t *testing.T, title string, at time.Time) string {
	t.Helper()
	b, err := json.Marshal(bellstate.Item{ID: "id-" + title, Title: title, Message: bellloadMessage, Type: "General",
		CreatedBy: senderName, CreatedAt: at, Addressee: adminAddressee})
	require.NoError(t, err)
	return string(b)
}

// wholeEvent and changeEvent are the bell's events.
func wholeEvent(id, unread int, items ...string) string {
	return fmt.Sprintf("id: %d\nevent: bell\ndata: {\"viewer\":\"v\",\"unread\":%d,\"groups\":[{\"source\":\"\",\"items\":[%s]}]}\n\n",
		id, unread, strings.Join(items, ","))
}

func changeEvent(id, count, unread int, put ...string) string {
	return fmt.Sprintf("id: %d\nevent: change\ndata: {\"viewer\":\"v\",\"unread\":%d,\"count\":%d,\"put\":[%s],\"remove\":[]}\n\n",
		id, unread, count, strings.Join(put, ","))
}

// A stream's events apply wherever the reads cut them: the state ends
// holding each notification, in order. Negative control: the same stream
// with its second event missing fails at the third (a gap), and with the
// second doubled fails at the copy — neither is taken as a state.
func TestAStreamsEventsApplyWhereverAReadCutsThemAndAMissedOneFails(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 2, 3, 123456789, time.UTC)
	a, b, c := itemJSON(t, "a", at), itemJSON(t, "b", at.Add(time.Second)), itemJSON(t, "c", at.Add(2*time.Second))
	whole, second, third := wholeEvent(1, 1, a), changeEvent(2, 2, 2, b), changeEvent(3, 3, 3, c)
	all := []byte(whole + second + third)
	for cut := range len(all) + 1 {
		s := &stream{viewer: "v"}
		require.NoError(t, s.feed(all[:cut], nil), "cut at %d", cut)
		require.NoError(t, s.feed(all[cut:], nil), "cut at %d", cut)
		assert.Equal(t, uint64(3), s.state.ID(), "cut at %d", cut)
		require.NotNil(t, s.state.Find("c"), "cut at %d", cut)
		assert.Equal(t, 3, s.state.Len())
		assert.True(t, s.state.Find("c").CreatedAt.Equal(at.Add(2*time.Second)))
	}
	r := newRound("c", adminAddressee, bellloadMessage, 0, 1)
	s := &stream{viewer: "v"}
	require.NoError(t, s.feed(all, nil))
	assert.NoError(t, r.check(s.state.Find("c"), "v"))
	assert.Error(t, newRound("c", adminAddressee, "other", 0, 1).check(s.state.Find("c"), "v"), "negative control: other content")

	var gap *bellstate.GapError
	missed := &stream{viewer: "v"}
	assert.ErrorAs(t, missed.feed([]byte(whole+third), nil), &gap, "negative control: the second missed")
	doubled := &stream{viewer: "v"}
	assert.ErrorAs(t, doubled.feed([]byte(whole+second+second), nil), &gap, "negative control: the second twice")
}

// Streams read through epoll report the awaited notification on each
// stream it must reach, timed from its createdAt, and a stream the server
// ends before it comes fails the round instead of being waited for. The
// server is a real net/http server speaking the bell's event stream. Run
// with the readers reading in io_uring batches (where available) and with
// a read(2) per stream (-read-each).
func TestTheReadersTimeEachAwaitedStreamAndReportAStreamThatEnded(t *testing.T) {
	t.Run("io_uring batches", func(t *testing.T) {
		if !sockbatchtest.Available(t) { // fails with MESHRX_REQUIRE_IOURING=1
			t.Log("the readers fall back to a read per stream")
		}
		readersTimeEachStream(t, true)
	})
	t.Run("a read per stream (-read-each)", func(t *testing.T) { readersTimeEachStream(t, false) })
}

func readersTimeEachStream(t *testing.T, batch bool) {
	const n = 6
	send := make([]chan string, n) // per stream: an event's title, or "" to end the stream
	for i := range send {
		send[i] = make(chan string, 1)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if err != nil || i < 0 || i >= n {
			http.Error(w, "who?", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Connection", "close") // as the bell's: the stream ends with its connection
		fmt.Fprint(w, "event: hello\ndata: {}\n\n"+wholeEvent(1, 0))
		w.(http.Flusher).Flush()
		for id := 2; ; id++ {
			select {
			case title := <-send[i]:
				if title == "" {
					return
				}
				fmt.Fprint(w, changeEvent(id, id-1, id-1, itemJSON(t, title, time.Now())))
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	}))
	defer srv.Close()
	streams := make([]*stream, n)
	for i := range streams {
		streams[i] = &stream{viewer: fmt.Sprint("v", i), token: strconv.Itoa(i), idx: i, fd: -1}
	}
	rs, err := newReaders(streams, 2, batch)
	require.NoError(t, err)
	defer rs.close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, openAll(ctx, rs, srv.URL, streams, config{dial: 3, bound: time.Minute}))

	await := func(title string, lo, hi int) *round {
		r := newRound(title, adminAddressee, bellloadMessage, lo, hi)
		rs.cur.Store(r)
		for i := lo; i < hi; i++ {
			send[i] <- title
		}
		select {
		case <-r.done:
		case <-time.After(time.Minute):
			t.Fatalf("%q: %d streams not reached within a minute", title, r.left.Load())
		}
		return r
	}
	r := await("first", 2, 6)
	assert.Zero(t, r.lost.Load())
	assert.NotZero(t, r.commit.Load())
	for i, at := range r.at {
		assert.GreaterOrEqual(t, at, r.commit.Load(), "stream %d: arrival after the commit", i+2)
	}
	// Streams 4 and 5 end; 2 and 3 get the next one.
	r = newRound("second", adminAddressee, bellloadMessage, 2, 6)
	rs.cur.Store(r)
	send[4] <- ""
	send[5] <- ""
	send[2] <- "second"
	send[3] <- "second"
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		t.Fatalf("the round did not end within a minute: %d left", r.left.Load())
	}
	assert.Equal(t, int64(2), r.lost.Load(), "the two ended streams are reported, not waited for")
	assert.Equal(t, int64(2), rs.ended.Load())
}

// A round begun while a batch of ready sockets is being read is checked
// against what the batch's later reads return, not the round awaited at
// the wake: the next round's event read in the same batch reaches it, and
// is timed at its read, not at the earlier wake.
//
// Negative control: with the round loaded once per batch, before the
// reads (as at 7289de3), the read checks the old round, the new one is
// not told and this test fails, as it did when run so.
func TestARoundBegunDuringABatchIsCheckedAgainstThatBatchsLaterReads(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer syscall.Close(fds[1])
	s := &stream{viewer: "v0", idx: 0, fd: fds[0]}
	rs, err := newReaders([]*stream{s}, 1, false)
	require.NoError(t, err)
	defer rs.close() // closes s.fd

	old := newRound("old", adminAddressee, bellloadMessage, 0, 1)
	next := newRound("next", adminAddressee, bellloadMessage, 0, 1)
	require.NoError(t, s.feed([]byte(wholeEvent(1, 0)), nil))
	wake := time.Now().UnixNano()
	// The batch woke while old was awaited; next began, and its event
	// came, before this stream's read.
	rs.cur.Store(next)
	_, err = syscall.Write(fds[1], []byte(changeEvent(2, 1, 1, itemJSON(t, "next", time.Now()))))
	require.NoError(t, err)
	rs.read(rs.eps[0], s, old, make([]byte, readBuffer), wake, nil)
	require.NoError(t, rs.failed())

	assert.Zero(t, next.left.Load(), "the new round was told")
	assert.Greater(t, next.at[0], wake, "timed at the read, after the wake")
	assert.Equal(t, int64(1), old.left.Load(), "the old round was not")
}

// The end check passes streams whose states hold what was sent to them
// and names one that lacks a notification, or an admin whose state holds
// another number than the others' (the negative controls).
func TestTheEndCheckNamesAStreamMissingWhatWasSentToIt(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 2, 3, 0, time.UTC)
	a, b := itemJSON(t, "a", at), itemJSON(t, "b", at.Add(time.Second))
	mk := func(viewer, events string) *stream {
		s := &stream{viewer: viewer}
		require.NoError(t, s.feed([]byte(events), nil))
		return s
	}
	viewer := mk("user00001", wholeEvent(1, 1, a))
	admin1 := mk("admin00001", wholeEvent(1, 2, a, b))
	admin2 := mk("admin00002", wholeEvent(1, 1, a)+changeEvent(2, 2, 2, b))
	sent := [][]string{{"a"}, {"b"}, {"b"}}
	require.NoError(t, verify([]*stream{viewer, admin1, admin2}, sent, 1))

	lacking := mk("admin00002", wholeEvent(1, 1, a))
	err := verify([]*stream{viewer, admin1, lacking}, sent, 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `stream of admin00002: "b" is not in its state at the end`)
	assert.Contains(t, err.Error(), "stream of admin00002: 1 notifications at the end, admin00001's 2")
}

// A run the bell refuses (here more users than it generates) fails as soon
// as the bell exits, with the bell's own reason. Negative control: with
// the bell's stderr discarded and its exit unnoticed (as it was), the run
// waited the whole -bound and said only that the bell "did not say where
// it listens": the test failed on both counts.
func TestARunTheBellRefusesFailsAtOnceWithTheBellsReason(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the bell")
	}
	const bound = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "bell") // built first: the bound is the start's, not the build's
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "../bell")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	c := config{viewers: 100_000, admins: 1, sends: 1, dial: 1, readers: 1, bound: bound, bin: bin}
	began := time.Now()
	srv, err := startBell(ctx, c)
	if err == nil {
		srv.stop()
	}
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), "-users plus -admins must be at most", "the bell's reason")
	assert.Contains(t, err.Error(), "-viewers", "bellload's flag behind the bell's -users")
	assert.Less(t, time.Since(began), bound, "it did not wait for the bound")
}
