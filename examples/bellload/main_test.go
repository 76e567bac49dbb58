package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
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
	c := config{viewers: 30, admins: 5, sends: 10, broadcasts: 2, dial: 8, bound: time.Minute, pkg: "../bell"}
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
	assert.Regexp(t, regexp.MustCompile(`(?m)^summary: viewers=30 admins=5 rss_mb=[1-9][0-9.]* deliver_p50_ms=[0-9.]+ deliver_p99_ms=[0-9.]+ broadcast_p99_ms=[0-9.]+$`), out.String())
	assert.NotContains(t, out.String(), "broadcast_p99_ms=0.00", "the broadcasts were timed")

	client := &http.Client{}
	defer client.CloseIdleConnections()
	refused := func(s *stream) error {
		failed := make(chan error, 1)
		s.run(ctx, client, srv.base, func(err error) { failed <- err })
		return <-failed
	}
	ok := srv.stream("user00001")
	require.NotEmpty(t, ok.token)
	err = refused(&stream{viewer: "user00001"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stream of user00001: status 401", "negative control: no token")
	err = refused(&stream{viewer: "user00001", token: srv.tokens["user00002"]})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stream of user00001: status 403", "negative control: another user's token")
	_, err = timeDelivery(ctx, client, srv.base, srv.tokens["user00001"], "not an admin", adminAddressee, nil, c.bound)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "403", "only a global admin sends to Admin")
}

// A bell event whose data line is longer than the stream's read buffer (a
// bell of many notifications) is read as one event: the awaited title in
// it is seen, and the stream goes on to the next event. Negative control:
// before, the stream ended at the long line (bufio.ErrBufferFull) and every
// broadcast after the state outgrew 4 KB timed out (seen at the 15th).
func TestAnEventLongerThanTheReadBufferIsReadWhole(t *testing.T) {
	long := `{"items":"` + strings.Repeat("x", 3*4096) + `","title":"late"}`
	next := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: bell\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		fmt.Fprintf(w, "event: bell\ndata: %s\n\n", long)
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "event: bell\ndata: {\"title\":\"after\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	client := srv.Client()
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{viewer: "v"}
	arrived := make(chan result, 2)
	s.expect("late", time.Now(), arrived)
	opened := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(ctx, client, srv.URL, func(err error) { opened <- err })
	}()
	defer func() { cancel(); <-done }()
	require.NoError(t, <-opened)
	for _, title := range []string{"late", "after"} {
		select {
		case <-arrived:
		case <-time.After(time.Minute):
			t.Fatalf("the event with %q was not seen within a minute", title)
		}
		if title == "late" {
			s.expect("after", time.Now(), arrived)
			close(next)
		}
	}
}
