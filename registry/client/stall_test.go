package client

import (
	"bytes"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An index whose body stops half-way is cut at the attempt timeout, and
// the error counts every attempt the call made: before, a body that
// stalled after a 503 had been retried said "after 1 attempt(s)".
// Negative control: with fullIndex's TransportError back at Attempts: 1,
// Attempts is 1 here.
func TestAnIndexThatStallsMidBodyIsCutAtItsAttemptTimeoutCountingEveryAttempt(t *testing.T) {
	const attemptTimeout = 200 * time.Millisecond
	srv := newScriptedRegistry(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			unavailable("0")(n, w, r)
			return
		}
		w.Header().Set("Content-Length", "1000")
		_, _ = w.Write([]byte(`{"bundles":[`))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // stalls until the client leaves
	})
	c := newTestClient(t, srv.Server, Options{Attempts: 2, AttemptTimeout: attemptTimeout, MaxRetryWait: time.Millisecond})

	ctx := boundedContext(t)
	_, _, err := c.Index(ctx, "")
	var te *TransportError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 2, te.Attempts, "%v", err)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout(), "the attempt timed out: %v", err)
	assert.NoError(t, ctx.Err(), "the attempt's bound ended the call, not the caller's")
}

// A publication that gets no answer says it was a POST: before, every
// TransportError said GET. Negative control: without Method set in
// Publish, the message starts "registry: GET".
func TestAPublicationWithNoAnswerIsReportedAsAPost(t *testing.T) {
	srv := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close() // no answer at all
		}
	})
	c := newTestClient(t, srv.Server, Options{PublishToken: "publish-token", Attempts: 1})

	_, err := c.Publish(boundedContext(t), "Acme.Crm", "1.2.0", "", bytes.NewReader([]byte("zip")))
	var te *TransportError
	require.ErrorAs(t, err, &te)
	assert.True(t, strings.HasPrefix(err.Error(), "registry: POST "+srv.URL), "%v", err)
}
