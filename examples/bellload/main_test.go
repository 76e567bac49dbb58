package main

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The load program, run against the real bell at a small size, opens every
// stream, times every delivery and prints the summary line; a stream the
// bell refuses fails the run with the viewer and the status.
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

	var out bytes.Buffer
	require.NoError(t, measure(ctx, srv, c, &out))
	assert.Regexp(t, regexp.MustCompile(`(?m)^summary: viewers=30 admins=5 rss_mb=[1-9][0-9.]* deliver_p50_ms=[0-9.]+ deliver_p99_ms=[0-9.]+ broadcast_p99_ms=[0-9.]+$`), out.String())
	assert.NotContains(t, out.String(), "broadcast_p99_ms=0.00", "the broadcasts were timed")

	// Negative control: a viewer name the bell refuses fails the stream.
	client := &http.Client{}
	defer client.CloseIdleConnections()
	failed := make(chan error, 1)
	(&stream{viewer: "_bad"}).run(ctx, client, srv.base, func(err error) { failed <- err })
	err = <-failed
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stream of _bad: status 400")
}
