package client

import (
	"bytes"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/internal/testkit"
)

// A registry (or whatever answers at its URL) that redirects to another
// origin must not receive the instance key or the publish token there: Go's
// client keeps Authorization on a redirect to the same host name whatever
// the port or scheme, so a redirect to 127.0.0.1 on another port (another
// service), or from https to http, handed it over. The client follows a
// redirect only within its registry's origin; any other is the 3xx as an
// *HTTPError. Negative control: with newRetrying's CheckRedirect removed,
// the other server records "Bearer mwi_test_key" for Index, Download and
// Publish, and the calls succeed against it.
func TestARedirectToAnotherOriginIsNotFollowedAndReceivesNoCredential(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"module":"Acme.Crm","created":true}`))
			return
		}
		writeIndex(w, "", demoIndex)
	}))
	var sameOrigin int
	srv := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("hop") == "" {
			// Control: a redirect within the registry's origin is followed.
			sameOrigin++
			http.Redirect(w, r, r.URL.Path+"?hop=1&"+r.URL.RawQuery, http.StatusTemporaryRedirect)
			return
		}
		http.Redirect(w, r, other.URL+r.URL.Path+"?"+r.URL.RawQuery, http.StatusTemporaryRedirect)
	})
	c := newTestClient(t, srv.Server, Options{PublishToken: "publish-token", HTTPClient: &http.Client{Transport: &http.Transport{}}})
	t.Cleanup(func() { other.CloseClientConnections() })

	refused := func(call string, err error) {
		var he *HTTPError
		if assert.ErrorAs(t, err, &he, call) {
			assert.Equal(t, http.StatusTemporaryRedirect, he.Status, call)
		}
	}
	_, _, err := c.Index(boundedContext(t), "")
	refused("Index", err)
	rc, err := c.Download(boundedContext(t), IndexEntry{Plugin: "Acme.Crm", Version: "1.2.0", SHA256: sha256Hex([]byte("x"))})
	if err == nil {
		_ = rc.Close()
	}
	refused("Download", err)
	_, err = c.Publish(boundedContext(t), "Acme.Crm", "1.2.0", "", bytes.NewReader([]byte("zip")))
	refused("Publish", err)

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, leaked, "the other origin received requests, with these credentials")
	assert.Equal(t, 3, sameOrigin, "a redirect within the registry's origin is followed")
}
