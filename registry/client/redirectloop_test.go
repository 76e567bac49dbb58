package client

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A registry that redirects within its origin without end is reported as a
// redirect loop, naming the URL asked for and where the last redirect
// pointed, for Index, Download and Publish alike, after one attempt: it was
// an *HTTPError 302 "after 1 attempt(s)", which reads as a refusal and does
// not say what went wrong. Negative control, run by hand: without the
// RedirectLoopError case in newRetrying's ErrorHandler, errors.As found no
// *RedirectLoopError and the error was "answered 302 Found after 1
// attempt(s)".
func TestARedirectLoopWithinTheOriginIsReportedAsALoopNamingItsURL(t *testing.T) {
	srv := newScriptedRegistry(t, func(n int, w http.ResponseWriter, r *http.Request) {
		// Alternate between two URLs of the same origin: a loop.
		next := "/loop-a"
		if r.URL.Path == "/loop-a" {
			next = "/loop-b"
		}
		http.Redirect(w, r, next, http.StatusFound)
	})
	c := newTestClient(t, srv.Server, Options{PublishToken: "publish-token", HTTPClient: &http.Client{Transport: &http.Transport{}}})

	looped := func(call, method string, err error) {
		t.Helper()
		var le *RedirectLoopError
		require.ErrorAs(t, err, &le, call)
		assert.Equal(t, method, cmpOr(le.Method), call)
		assert.True(t, strings.HasPrefix(le.URL, srv.URL+"/"), "%s: URL %q", call, le.URL)
		assert.Contains(t, le.Last, "/loop-", call)
		assert.Contains(t, err.Error(), "redirect loop", call)
		assert.Contains(t, err.Error(), le.URL, call)
		var he *HTTPError
		assert.False(t, errors.As(err, &he), "%s: still an *HTTPError: %v", call, err)
	}
	before := srv.requests()
	_, _, err := c.Index(boundedContext(t), "")
	looped("Index", http.MethodGet, err)
	assert.Equal(t, 10, srv.requests()-before, "one attempt: the request and 9 redirects followed, the 10th not")
	rc, err := c.Download(boundedContext(t), IndexEntry{Plugin: "Acme.Crm", Version: "1.2.0", SHA256: sha256Hex([]byte("x"))})
	if err == nil {
		_ = rc.Close()
	}
	looped("Download", http.MethodGet, err)
	_, err = c.Publish(boundedContext(t), "Acme.Crm", "1.2.0", "", bytes.NewReader([]byte("zip")))
	looped("Publish", http.MethodPost, err)
}

func cmpOr(m string) string {
	if m == "" {
		return http.MethodGet
	}
	return m
}
