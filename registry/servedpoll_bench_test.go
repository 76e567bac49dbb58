package registry

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/registry/client"
)

// BenchmarkAServedPoll is one consumer's poll as the load program makes it,
// through the server's handler without the network: authentication on
// memstore, the snapshot, the catalog, and the answer from the document
// kept for the caller's entitlement. The request is built once and the
// response writer keeps nothing, so what is counted is the registry's own
// allocation per poll (net/http's per-request allocations are not in it).
//
//   - delta304: ?since= the newest digest (what almost every poll is);
//   - ifnonematch304: If-None-Match with the newest ETag;
//   - delta: ?since= the document before one publication (one entry);
//   - delta304-legs: delta304 on a store that does not gate the
//     authentication's node types (every poll reads its legs).
//
// The others run on a memstore that gates them, as examples/registry and
// examples/loadtest open theirs, with the authenticator reading it
// directly (not through the fixture's counting wrapper, which hides the
// store's security version). The type names are spelled out so that the
// file runs unchanged on a base without auth.DecisionTypes.
func BenchmarkAServedPoll(b *testing.B) {
	b.Run("delta304", func(b *testing.B) { benchmarkAServedPoll(b, true, "delta304") })
	b.Run("ifnonematch304", func(b *testing.B) { benchmarkAServedPoll(b, true, "ifnonematch304") })
	b.Run("delta", func(b *testing.B) { benchmarkAServedPoll(b, true, "delta") })
	b.Run("delta304-legs", func(b *testing.B) { benchmarkAServedPoll(b, false, "delta304") })
}

// pollFixture is the benchmark's registry: with gated, on a memstore that
// gates the authentication's node types, read by the authenticator itself
// (or through authMesh, when given).
func pollFixture(t testing.TB, gated bool, authMesh ...func(*memstore.Store) mesh.Store) *fixture {
	if !gated {
		return newFixture(t, fixtureOptions{})
	}
	store, err := memstore.New(memstore.Options{GatedTypes: []string{auth.KeyIndexNodeType, auth.InstanceNodeType, auth.GrantNodeType}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	var m mesh.Store = store
	for _, wrap := range authMesh {
		m = wrap(store)
	}
	return newFixture(t, fixtureOptions{store: store, server: func(o *ServerOptions) {
		o.Auth = &auth.Authenticator{Mesh: m, Clock: o.Clock, Ladder: &auth.PlanTierLadder{Mesh: m, Clock: o.Clock}}
	}})
}

func benchmarkAServedPoll(b *testing.B, gated bool, which string) {
	f := pollFixture(b, gated)
	for i := range 50 {
		f.publish("Module"+strconv.Itoa(i), "1.0.0", "")
	}
	key := f.instance("acme", "pro", "Plugins/*")
	_, before := f.index(key)
	f.publish("Module7", "1.0.1", "")
	_, got := f.index(key)
	etag, old := got.header.Get("ETag"), before.header.Get("ETag")
	h := f.server.Handler()
	poll := func(b *testing.B, target, ifNoneMatch string, want int) {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		w := &pollWriter{header: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			clear(w.header)
			w.status = 0
			h.ServeHTTP(w, req)
			if w.status != want {
				b.Fatalf("status %d, want %d", w.status, want)
			}
		}
	}
	since := func(etag string) string {
		return client.IndexPath + "?" + client.SinceParam + "=" + strings.Trim(etag, `"`)
	}
	switch which {
	case "delta304":
		poll(b, since(etag), "", http.StatusNotModified)
	case "ifnonematch304":
		poll(b, client.IndexPath, etag, http.StatusNotModified)
	case "delta":
		poll(b, since(old), "", http.StatusOK)
	}
}

// pollWriter is a ResponseWriter that discards the body and reuses its
// header map, so a benchmark counts the handler's allocations only.
type pollWriter struct {
	header http.Header
	status int
}

func (w *pollWriter) Header() http.Header { return w.header }
func (w *pollWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *pollWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(p), nil
}
