package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
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
