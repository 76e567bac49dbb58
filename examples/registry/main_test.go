package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/client"
)

// pg is the PostgreSQL server the replica recipe runs on.
var pg pgtest.Harness

func TestMain(m *testing.M) { goleak.VerifyTestMain(pg.Wrap(m)) }

// bound is the longest a test waits for something that must happen; a
// passing run never comes near it. It is a ceiling for a hang: the
// registry's start (a store, a volume, the demo's publications) beside a
// loaded machine's other work takes seconds, not tens of them.
const bound = 30 * time.Second

// started is a registry running in process, as `go run ./examples/registry -addr 127.0.0.1:0` would.
type started struct {
	url, key, token, data string
	metrics               string // the /metrics URL on its own listener
	client                *http.Client
	done                  <-chan error
	stop                  func() // shuts it down (once; the test's cleanup does it too)
	// exited waits, within the bound, for the registry to stop on its
	// own and returns run's error; stop then only checks it is gone.
	exited func() error
}

func start(t *testing.T, h hooks, flags ...string) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0"}, flags...), w, io.Discard, h)
		_ = w.CloseWithError(io.EOF)
		done <- err
	}()
	s := &started{client: &http.Client{Transport: &http.Transport{}, Timeout: bound}, done: done}
	var ended atomic.Bool // exited took run's result
	s.exited = func() error {
		select {
		case err := <-done:
			ended.Store(true)
			return err
		case <-time.After(bound):
			return errors.New("the registry did not stop on its own within the bound")
		}
	}
	s.stop = sync.OnceFunc(func() {
		s.client.CloseIdleConnections()
		cancel()
		if ended.Load() {
			return
		}
		select {
		case err := <-done:
			assert.NoError(t, err, "the registry's shutdown")
		case <-time.After(bound):
			t.Error("the registry did not shut down within the bound")
		}
		if !slices.Contains(flags, "-data") {
			_, err := os.Stat(s.data)
			assert.True(t, os.IsNotExist(err), "the temporary data directory is removed on exit")
		}
	})
	t.Cleanup(s.stop)

	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	deadline := time.After(bound)
	for s.url == "" {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "the registry stopped before it listened")
			switch {
			case strings.HasPrefix(line, "listening on "):
				s.url = strings.TrimPrefix(line, "listening on ")
			case strings.HasPrefix(line, "demo instance key: "):
				s.key = strings.TrimPrefix(line, "demo instance key: ")
			case strings.HasPrefix(line, "publish token: "):
				s.token = strings.TrimPrefix(line, "publish token: ")
			case strings.HasPrefix(line, "metrics on "):
				s.metrics = strings.TrimPrefix(line, "metrics on ")
			case strings.HasPrefix(line, "data directory: "):
				s.data = strings.TrimPrefix(line, "data directory: ")
			}
		case <-deadline:
			require.FailNow(t, "the registry did not print its address within the bound")
		}
	}
	go func() { // drain, so the registry never blocks on its output
		for range lines {
		}
	}()
	require.True(t, strings.HasPrefix(s.key, "mwi_"), "demo key %q", s.key)
	require.NotEmpty(t, s.token)
	return s
}

func (s *started) do(t *testing.T, method, path, auth string, header http.Header, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.url+path, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, data
}

func TestTheExampleRegistryServesItsDemoToItsDemoKey(t *testing.T) {
	s := start(t, hooks{})
	bearer := "Bearer " + s.key

	// Without a key: 401, each one counted by /metrics (checked at the
	// end). That the 401 is decided without reading the mesh is a property
	// of the registry, asserted deterministically by registry's
	// TestAnIndexRequestWithoutAKeyIs401AndReadsNothing; its speed is a
	// figure, measured by auth's BenchmarkFast401. A wall-clock assertion
	// here (it was "median < 1 ms") failed on a loaded machine.
	for range 9 {
		resp, _ := s.do(t, http.MethodGet, client.IndexPath, "", nil, nil)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		assert.Equal(t, "Bearer", resp.Header.Get("WWW-Authenticate"))
	}

	resp, body := s.do(t, http.MethodGet, client.IndexPath, bearer, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var idx client.Index
	require.NoError(t, json.Unmarshal(body, &idx))
	got := map[string]string{}
	for _, b := range idx.Bundles {
		got[b.Plugin] = b.Version
	}
	want := map[string]string{}
	for _, p := range demoPackages() {
		want[p.name] = p.version
	}
	assert.Equal(t, want, got, "the demo instance (pro, Plugins/*) sees every demo package")
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)

	resp, body = s.do(t, http.MethodGet, client.IndexPath, bearer, http.Header{"If-None-Match": {etag}}, nil)
	assert.Equal(t, http.StatusNotModified, resp.StatusCode)
	assert.Empty(t, body)

	resp, _ = s.do(t, http.MethodGet, client.BundlesPath+"/..%2f..%2fetc/passwd", bearer, nil, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// Publish a new version with the token; this replica lists it at once.
	archive, err := demoBundle(demoPackage{name: "Demo.Hello", version: "1.1.0"})
	require.NoError(t, err)
	resp, _ = s.do(t, http.MethodPost, client.BundlesPath+"/Demo.Hello?version=1.1.0", "Bearer wrong-token", nil, archive)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, body = s.do(t, http.MethodPost, client.BundlesPath+"/Demo.Hello?version=1.1.0", "Bearer "+s.token, nil, archive)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", body)
	// The same bytes again are 200; other bytes for 1.1.0 are 409.
	resp, body = s.do(t, http.MethodPost, client.BundlesPath+"/Demo.Hello?version=1.1.0", "Bearer "+s.token, nil, archive)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	changed, err := demoBundle(demoPackage{name: "Demo.Hello", version: "1.1.0", tier: "changed"})
	require.NoError(t, err)
	resp, body = s.do(t, http.MethodPost, client.BundlesPath+"/Demo.Hello?version=1.1.0", "Bearer "+s.token, nil, changed)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "%s", body)

	resp, body = s.do(t, http.MethodGet, client.IndexPath, bearer, http.Header{"If-None-Match": {etag}}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the publication changed the index")
	require.NoError(t, json.Unmarshal(body, &idx))
	for _, b := range idx.Bundles {
		if b.Plugin == "Demo.Hello" {
			assert.Equal(t, "1.1.0", b.Version)
		}
	}

	// The bundle downloads through the consumer client, checked against the index.
	consumer, err := client.New(client.Options{BaseURL: s.url, Key: s.key})
	require.NoError(t, err)
	defer consumer.CloseIdleConnections()
	var entry client.IndexEntry
	for _, b := range idx.Bundles {
		if b.Plugin == "Demo.Hello" {
			entry = b
		}
	}
	rc, err := consumer.Download(t.Context(), entry)
	require.NoError(t, err)
	downloaded, err := io.ReadAll(rc)
	require.NoError(t, rc.Close())
	require.NoError(t, err)
	assert.Equal(t, archive, downloaded)

	for _, path := range []string{registry.LivePath, registry.ReadyPath, registry.HealthPath} {
		resp, body = s.do(t, http.MethodGet, path, "", nil, nil)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
	}
	resp, _ = s.do(t, http.MethodGet, "/metrics", "", nil, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no /metrics on the public listener")
	require.NotEmpty(t, s.metrics)
	require.True(t, strings.HasPrefix(s.metrics, "http://127.0.0.1:"), "metrics on loopback: %s", s.metrics)
	mresp, err := s.client.Get(s.metrics)
	require.NoError(t, err)
	defer mresp.Body.Close()
	body, err = io.ReadAll(mresp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, mresp.StatusCode)
	assert.Contains(t, string(body), `meshrx_registry_requests_total{route="index",status="401"} 9`)
}

func TestTheExampleCapsItsConnectionsByDefaultAndRefusesANonPositiveCap(t *testing.T) {
	cfg, err := parseFlags(nil, io.Discard, hooks{})
	require.NoError(t, err)
	assert.Equal(t, registry.DefaultMaxConnections, cfg.maxConns)
	for _, bad := range []string{"0", "-1"} {
		_, err := parseFlags([]string{"-max-conns", bad}, io.Discard, hooks{})
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "-max-conns")
	}
}

func TestTheExampleBuildsBundleURLsFromItsPublicURLNeverFromTheHost(t *testing.T) {
	for _, c := range []struct {
		flags  []string
		prefix string
	}{
		{nil, client.BundlesPath + "/"},
		{[]string{"-public-url", "https://registry.example.com"}, "https://registry.example.com" + client.BundlesPath + "/"},
	} {
		s := start(t, hooks{}, c.flags...)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+client.IndexPath, nil)
		require.NoError(t, err)
		req.Host = "evil.example"
		req.Header.Set("Authorization", "Bearer "+s.key)
		resp, err := s.client.Do(req)
		require.NoError(t, err)
		var idx client.Index
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&idx))
		require.NoError(t, resp.Body.Close())
		require.NotEmpty(t, idx.Bundles)
		for _, b := range idx.Bundles {
			assert.True(t, strings.HasPrefix(b.URL, c.prefix), "%s", b.URL)
			assert.NotContains(t, b.URL, "evil")
		}
	}
}
