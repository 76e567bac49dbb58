package client

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
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

// A bundle whose body stalls, or whose connection drops before its last
// byte, ends its read with a *TransportError naming the bundle's URL, as an
// index read does: before, Download's reader returned the bare "context
// deadline exceeded (Client.Timeout or context cancellation while reading
// body)" or "unexpected EOF", which named neither the bundle nor the
// registry. The cause is kept (a timeout is still a net.Error that says
// so). Negative control, run by hand: without the wrapping in
// verifiedBody.Read, ErrorAs *TransportError fails on the stalled read.
func TestADownloadThatStallsOrDropsMidBodyEndsWithATransportErrorNamingTheBundle(t *testing.T) {
	const downloadTimeout = 200 * time.Millisecond
	bundle := testkit.RandomBytes(100)
	srv := newScriptedRegistry(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(bundle)))
		_, _ = w.Write(bundle[:len(bundle)-1])
		w.(http.Flusher).Flush()
		if n == 0 {
			<-r.Context().Done() // the last byte never comes
			return
		}
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			_ = conn.Close() // the connection drops before the last byte
		}
	})
	c := newTestClient(t, srv.Server, Options{DownloadTimeout: downloadTimeout})
	entry := IndexEntry{Plugin: "Acme.Crm", Version: "1.0.0", SHA256: sha256Hex(bundle)}

	for _, stalls := range []bool{true, false} {
		ctx := boundedContext(t)
		rc, err := c.Download(ctx, entry)
		require.NoError(t, err)
		_, err = io.ReadAll(rc)
		_ = rc.Close()
		var te *TransportError
		require.ErrorAs(t, err, &te, "stalls %v", stalls)
		assert.Equal(t, srv.URL+BundlesPath+"/Acme.Crm/1.0.0", te.URL)
		assert.Contains(t, err.Error(), "/Acme.Crm/1.0.0")
		if stalls {
			var ne net.Error
			require.ErrorAs(t, err, &ne)
			assert.True(t, ne.Timeout(), "the download timeout ended it: %v", err)
		} else {
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		}
		assert.NoError(t, ctx.Err())
	}
}
