package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

// serve runs h behind a real HTTP server and fetches it once, bounded by a
// 10 s budget so a stuck handler fails the test instead of hanging it.
func serve(t *testing.T, h http.HandlerFunc) answer {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err, "waiting for the test server's answer")
	defer resp.Body.Close()

	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return answer{status: resp.StatusCode, header: resp.Header, body: body}
}

func TestAnUnauthenticatedCallerGets401WithABearerChallenge(t *testing.T) {
	a := serve(t, func(w http.ResponseWriter, _ *http.Request) { WriteUnauthenticated(w) })
	assert.Equal(t, http.StatusUnauthorized, a.status)
	assert.Equal(t, "Bearer", a.header.Get("WWW-Authenticate"))
	assert.Equal(t, "application/json; charset=utf-8", a.header.Get("Content-Type"))
	assert.Equal(t, "no-store", a.header.Get("Cache-Control"))
	assert.Equal(t, map[string]any{
		"error": "A registered instance key is required (Authorization: Bearer mwi_… or Basic with the key as password).",
	}, a.body)
	assert.Empty(t, a.header.Get("Retry-After"), "a 401 is a verdict, not a request to come back")
}

func TestACallerWhoseKeyCouldNotBeCheckedGets503AndIsToldItIsNotAboutTheirKey(t *testing.T) {
	const reason = "instance key: MeshWeaverInstance/0123456789ab: no answer within 10s"
	a := serve(t, func(w http.ResponseWriter, _ *http.Request) { WriteUnavailable(w, reason, 10*time.Second) })
	assert.Equal(t, http.StatusServiceUnavailable, a.status)
	assert.Equal(t, "10", a.header.Get("Retry-After"))
	assert.Equal(t, "application/json; charset=utf-8", a.header.Get("Content-Type"))
	assert.Equal(t, "no-store", a.header.Get("Cache-Control"))
	assert.Equal(t, reason, a.body["reason"])
	// A client reads what was waited on from waitingOn, as on every 503 of
	// the registry (before this field the fault drill counted these 503s
	// as retry_after_missing).
	assert.Equal(t, []any{"instance key"}, a.body["waitingOn"])
	assert.Contains(t, a.body["error"], "could not find out")
	assert.Contains(t, a.body["error"], "NOT a statement about your key or your grant")
	// Negative control: a 503 must not challenge for credentials, or a
	// client would discard a good key.
	assert.Empty(t, a.header.Get("WWW-Authenticate"))
	// And the 401 body carries no such disclaimer: the two are told apart by
	// status and by text.
	u := serve(t, func(w http.ResponseWriter, _ *http.Request) { WriteUnauthenticated(w) })
	assert.NotContains(t, u.body["error"], "NOT a statement")
}

func TestRetryAfterIsWholeSecondsRoundedUpWithADefault(t *testing.T) {
	cases := []struct {
		after time.Duration
		want  string
	}{
		{0, "5"},
		{-time.Second, "5"},
		{time.Millisecond, "1"},
		{1500 * time.Millisecond, "2"},
		{2 * time.Second, "2"},
		{30 * time.Second, "30"},
		{time.Duration(1<<63 - 1), "9223372037"},
	}
	for _, c := range cases {
		t.Run(c.after.String(), func(t *testing.T) {
			a := serve(t, func(w http.ResponseWriter, _ *http.Request) { WriteUnavailable(w, "r", c.after) })
			assert.Equal(t, c.want, a.header.Get("Retry-After"))
		})
	}
}
