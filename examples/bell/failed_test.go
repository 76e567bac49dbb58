package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/meshrx/meshrx/notifications"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A 5xx body names what failed with a stable reason; the driver's text
// goes to the log. A caller's own mistake (4xx) is told in full.
// (Negative control: with the body built from err.Error(), as before, the
// 503 and 500 bodies carry "user=postgres" and the path, and the first
// assertion in the loop fails.)
func TestAFailedAnswerShowsNoInternalTextButTheCallersMistakeInFull(t *testing.T) {
	internal := errors.New("failed to connect to user=postgres database=meshrx: openat /srv/meshrx/x: too many open files")
	var logs bytes.Buffer
	s := newServer(nil, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	for _, c := range []struct {
		err    error
		status int
		shown  string
	}{
		{fmt.Errorf("bell read: %w (%w)", internal, context.DeadlineExceeded), http.StatusServiceUnavailable, "mark read: could not find out"},
		{fmt.Errorf("bell read: %w", internal), http.StatusInternalServerError, "mark read: failed"},
		{&notifications.InvalidError{Field: "id", Value: "x", Reason: "is not a notification id"}, http.StatusBadRequest, "is not a notification id"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { s.failed(w, "mark read", c.err, nil) }))
		resp, err := srv.Client().Get(srv.URL)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		srv.Close()
		assert.Equal(t, c.status, resp.StatusCode)
		assert.Contains(t, string(body), c.shown)
		assert.NotContains(t, string(body), "postgres")
		assert.NotContains(t, string(body), "/srv/")
	}
	assert.Contains(t, logs.String(), "user=postgres", "the detail is logged")
}
