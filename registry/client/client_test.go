package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testInstanceKey = "mwi_test_key"

// scriptedRegistry is a real HTTP server whose n-th request (from 0) is
// answered by answer; it records when each request arrived and what it was.
type scriptedRegistry struct {
	*httptest.Server
	answer func(n int, w http.ResponseWriter, r *http.Request)

	mu       sync.Mutex
	arrived  []time.Time
	paths    []string
	keys     []string
	ifNoneOf []string
}

func newScriptedRegistry(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *scriptedRegistry {
	t.Helper()
	s := &scriptedRegistry{answer: answer}
	s.Server = testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		n := len(s.arrived)
		s.arrived = append(s.arrived, time.Now())
		s.paths = append(s.paths, r.URL.EscapedPath())
		s.keys = append(s.keys, r.Header.Get("Authorization"))
		s.ifNoneOf = append(s.ifNoneOf, r.Header.Get("If-None-Match"))
		s.mu.Unlock()
		s.answer(n, w, r)
	}))
	return s
}

func (s *scriptedRegistry) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.arrived)
}

func (s *scriptedRegistry) gap(i int) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrived[i].Sub(s.arrived[i-1])
}

// newTestClient returns a Client for srv whose idle connections are closed
// when the test ends.
func newTestClient(t *testing.T, srv *httptest.Server, opts Options) *Client {
	t.Helper()
	opts.BaseURL, opts.Key, opts.HTTPClient = srv.URL, testInstanceKey, srv.Client()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// boundedContext is the test's context cut at bound: a client call that
// does not return by then fails the test instead of hanging it.
func boundedContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Bound)
	t.Cleanup(cancel)
	return ctx
}

func writeIndex(w http.ResponseWriter, etag string, idx Index) {
	w.Header().Set("Content-Type", "application/json")
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	_ = json.NewEncoder(w).Encode(idx)
}

func unavailable(retryAfter string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", retryAfter)
		http.Error(w, `{"error":"no answer within 25s","waitingOn":["pushed artifacts record"]}`, http.StatusServiceUnavailable)
	}
}

var demoIndex = Index{Bundles: []IndexEntry{{Plugin: "Acme.Crm", Version: "1.2.0", URL: "https://r.example/api/plugins/bundles/Acme.Crm/1.2.0", SHA256: "ab"}}}

// New names the Options field the caller set; the environment variable is
// named only when the value came from it (OptionsFromEnv). Before, New said
// "MESHRX_REGISTRY_URL is empty" to a caller who had set no variable.
func TestAnEmptyRegistryURLIsRefusedNamingTheSetting(t *testing.T) {
	for _, base := range []string{"", "   ", "/api", "registry.example.com/api", "ftp://registry.example.com", "https://u:p@registry.example.com"} {
		_, err := New(Options{BaseURL: base, Key: testInstanceKey})
		var ce *ConfigError
		require.ErrorAs(t, err, &ce, "base %q", base)
		assert.Equal(t, "client.Options.BaseURL", ce.Setting, "base %q", base)
		assert.Contains(t, err.Error(), "client.Options.BaseURL", "base %q", base)
		assert.NotContains(t, err.Error(), "MESHRX_", "base %q: no environment variable was read", base)
	}
	_, err := New(Options{})
	assert.EqualError(t, err, "registry: client.Options.BaseURL is empty")
	_, err = New(Options{BaseURL: "https://registry.example.com"})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "client.Options.Key", ce.Setting)
	assert.NotContains(t, err.Error(), "MESHRX_")
	publisher, err := New(Options{BaseURL: "https://registry.example.com", PublishToken: "t"})
	require.NoError(t, err, "a publish token alone makes a client that publishes")
	_, _, err = publisher.Index(t.Context(), "")
	require.ErrorAs(t, err, &ce, "and says what Index lacks, without a request")
	assert.Equal(t, "client.Options.Key", ce.Setting)
	_, err = New(Options{BaseURL: "   "})
	assert.ErrorContains(t, err, "blank", "whitespace is not an absent value: say what it is")

	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	good := map[string]string{URLSetting: "https://registry.example.com", InstanceKeySetting: testInstanceKey}
	for _, c := range []struct {
		name    string
		env     map[string]string
		setting string
		problem string
	}{
		{"url missing", map[string]string{InstanceKeySetting: testInstanceKey}, URLSetting, "is not set"},
		{"url present but empty", map[string]string{URLSetting: "", InstanceKeySetting: testInstanceKey}, URLSetting, "is set but empty"},
		{"url whitespace", map[string]string{URLSetting: " \t", InstanceKeySetting: testInstanceKey}, URLSetting, "is set but empty"},
		{"url relative", map[string]string{URLSetting: "/api", InstanceKeySetting: testInstanceKey}, URLSetting, "is not an absolute URL"},
		{"key present but empty", map[string]string{URLSetting: "https://registry.example.com", InstanceKeySetting: ""}, InstanceKeySetting, "is set but empty"},
		{"key missing", map[string]string{URLSetting: "https://registry.example.com"}, InstanceKeySetting, "is not set"},
	} {
		_, err := OptionsFromEnv(env(c.env))
		var ce *ConfigError
		require.ErrorAs(t, err, &ce, c.name)
		assert.Equal(t, c.setting, ce.Setting, c.name)
		assert.Contains(t, err.Error(), c.setting+" "+c.problem, c.name)
		assert.NotContains(t, err.Error(), testInstanceKey, "%s: an error never repeats the key", c.name)
	}

	// Control: the same reading with both settings present succeeds.
	opts, err := OptionsFromEnv(env(good))
	require.NoError(t, err)
	assert.Equal(t, Options{BaseURL: "https://registry.example.com", Key: testInstanceKey}, opts)
	_, err = New(opts)
	require.NoError(t, err)
}

func TestTheClientWaitsWhatRetryAfterAsksBeforeTheNextAttempt(t *testing.T) {
	const asked = 2 * time.Second
	srv := newScriptedRegistry(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			unavailable("2")(n, w, r)
			return
		}
		writeIndex(w, `"v1"`, demoIndex)
	})
	c := newTestClient(t, srv.Server, Options{})

	ctx, cancel := context.WithTimeout(t.Context(), asked+testkit.Bound)
	defer cancel()
	idx, etag, err := c.Index(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, demoIndex, idx)
	assert.Equal(t, `"v1"`, etag)
	require.Equal(t, 2, srv.requests())
	// Measured on the server's own clock. Without honouring Retry-After the
	// client's backoff would retry after 1s, and this would fail.
	assert.GreaterOrEqual(t, srv.gap(1), asked)
}

func TestRetryAfterIsCappedByMaxRetryWait(t *testing.T) {
	const capped = 50 * time.Millisecond
	srv := newScriptedRegistry(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			unavailable("3600")(n, w, r)
			return
		}
		writeIndex(w, "", demoIndex)
	})
	c := newTestClient(t, srv.Server, Options{MaxRetryWait: capped})

	// Uncapped, the client would wait an hour and the bounded context would
	// end the call with an error.
	_, _, err := c.Index(boundedContext(t), "")
	require.NoError(t, err)
	require.Equal(t, 2, srv.requests())
	assert.GreaterOrEqual(t, srv.gap(1), capped)
}

func TestAttemptsAreBoundedAndExhaustionIsAnHTTPError(t *testing.T) {
	for _, c := range []struct {
		attempts, want int
	}{{0, DefaultAttempts}, {4, 4}} {
		srv := newScriptedRegistry(t, unavailable("0"))
		client := newTestClient(t, srv.Server, Options{Attempts: c.attempts})

		_, _, err := client.Index(boundedContext(t), "")
		var he *HTTPError
		require.ErrorAs(t, err, &he)
		assert.Equal(t, http.StatusServiceUnavailable, he.Status)
		assert.Equal(t, c.want, he.Attempts)
		assert.Equal(t, c.want, srv.requests(), "exactly Attempts requests")
		assert.Contains(t, he.Body, "pushed artifacts record", "the registry's own reason is kept")
		assert.Equal(t, srv.URL+IndexPath, he.URL)
	}
}

func TestOnlyTooManyRequestsAndCouldNotFindOutAreRetriedNeverA500(t *testing.T) {
	for _, c := range []struct {
		status, requests int
	}{
		{http.StatusUnauthorized, 1},
		{http.StatusNotFound, 1},
		{http.StatusInternalServerError, 1}, // a deterministic failure: retrying hits the same wall
		{http.StatusTooManyRequests, 3},     // control: the same client does retry what may pass
		{http.StatusServiceUnavailable, 3},
	} {
		srv := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "0")
			http.Error(w, http.StatusText(c.status), c.status)
		})
		client := newTestClient(t, srv.Server, Options{Attempts: 3})

		_, _, err := client.Index(boundedContext(t), "")
		var he *HTTPError
		require.ErrorAs(t, err, &he, "status %d", c.status)
		assert.Equal(t, c.status, he.Status)
		assert.Equal(t, c.requests, he.Attempts, "status %d", c.status)
		assert.Equal(t, c.requests, srv.requests(), "status %d", c.status)
	}
}

func TestAnAttemptThatHangsIsCutAtItsTimeout(t *testing.T) {
	const attemptTimeout = 100 * time.Millisecond
	srv := newScriptedRegistry(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers; the client's leaving ends it
	})
	c := newTestClient(t, srv.Server, Options{Attempts: 2, AttemptTimeout: attemptTimeout, MaxRetryWait: time.Millisecond})

	// Without the attempt timeout the call would be held until the test's
	// bounded context ends, and the error would be that context's.
	ctx := boundedContext(t)
	_, _, err := c.Index(ctx, "")
	var te *TransportError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 2, te.Attempts)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout(), "the attempt timed out: %v", err)
	assert.NoError(t, ctx.Err(), "it was the attempt's bound that ended the call, not the caller's")
	assert.Equal(t, 2, srv.requests())
}

func TestAnUnchangedIndexIsNotModified(t *testing.T) {
	srv := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		writeIndex(w, `"v1"`, demoIndex)
	})
	c := newTestClient(t, srv.Server, Options{})

	idx, etag, err := c.Index(boundedContext(t), "")
	require.NoError(t, err)
	assert.Equal(t, demoIndex, idx)
	_, again, err := c.Index(boundedContext(t), etag)
	require.ErrorIs(t, err, ErrNotModified)
	assert.Equal(t, `"v1"`, again)

	assert.Equal(t, []string{"", `"v1"`}, srv.ifNoneOf)
	assert.Equal(t, []string{"Bearer " + testInstanceKey, "Bearer " + testInstanceKey}, srv.keys)
	assert.Equal(t, []string{IndexPath, IndexPath}, srv.paths)
}

func TestADownloadAsksForTheBundleByNameAndRefusesUnsafeNames(t *testing.T) {
	bundle := testkit.RandomBytes(8 << 10)
	srv := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(bundle) })
	c := newTestClient(t, srv.Server, Options{})

	rc, err := c.Download(boundedContext(t), IndexEntry{Plugin: "Acme.Crm", Version: "1.2.0+build.7", SHA256: sha256Hex(bundle)})
	require.NoError(t, err)
	got, err := io.ReadAll(rc)
	require.NoError(t, rc.Close())
	require.NoError(t, err)
	assert.Equal(t, bundle, got)
	assert.Equal(t, []string{BundlesPath + "/Acme.Crm/1.2.0+build.7"}, srv.paths)

	for _, name := range [][2]string{{"../etc", "1.0"}, {"Acme.Crm", "1.0/../../x"}, {"", "1.0"}} {
		_, err := c.Download(boundedContext(t), IndexEntry{Plugin: name[0], Version: name[1], SHA256: sha256Hex(bundle)})
		var ne *landing.NameError
		require.ErrorAs(t, err, &ne, "%q", name)
	}
	assert.Equal(t, 1, srv.requests(), "a refused name makes no request")

	// A download that is refused is an *HTTPError like any other call.
	missing := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) })
	_, err = newTestClient(t, missing.Server, Options{}).Download(boundedContext(t), IndexEntry{Plugin: "Acme.Crm", Version: "9.9.9", SHA256: sha256Hex(bundle)})
	var he *HTTPError
	require.True(t, errors.As(err, &he))
	assert.Equal(t, http.StatusNotFound, he.Status)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestTheClientVerifiesTheSha256TheIndexListsForWhatItDownloads(t *testing.T) {
	listed := testkit.RandomBytes(8 << 10)
	served := append([]byte(nil), listed...)
	served[100] ^= 0xff // one byte changed on the way: same size, other bytes
	srv := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(served) })
	c := newTestClient(t, srv.Server, Options{})
	entry := IndexEntry{Plugin: "Acme.Crm", Version: "1.0.0", SHA256: sha256Hex(listed)}

	rc, err := c.Download(boundedContext(t), entry)
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	require.NoError(t, rc.Close())
	var mismatch *DigestError
	require.ErrorAs(t, err, &mismatch, "reading to the end ends with the mismatch, not io.EOF")
	assert.Equal(t, sha256Hex(listed), mismatch.Want)
	assert.Equal(t, sha256Hex(served), mismatch.Got)

	// An answer that names other bytes in its digest header is refused
	// before its body is read.
	named := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(BundleDigestHeader, sha256Hex(served))
		_, _ = w.Write(served)
	})
	_, err = newTestClient(t, named.Server, Options{}).Download(boundedContext(t), entry)
	require.ErrorAs(t, err, &mismatch)

	// An entry with no valid sha256 cannot be verified: no request is made.
	before := srv.requests()
	_, err = c.Download(boundedContext(t), IndexEntry{Plugin: "Acme.Crm", Version: "1.0.0", SHA256: "not-a-digest"})
	require.ErrorAs(t, err, &mismatch)
	assert.Equal(t, before, srv.requests())

	// Control: the listed bytes read to a clean end.
	served = listed
	rc, err = c.Download(boundedContext(t), entry)
	require.NoError(t, err)
	got, err := io.ReadAll(rc)
	require.NoError(t, rc.Close())
	require.NoError(t, err)
	assert.Equal(t, listed, got)
}
