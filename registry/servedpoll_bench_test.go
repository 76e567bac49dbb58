package registry

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

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
//   - delta: ?since= the document before one publication (one entry).
func BenchmarkAServedPoll(b *testing.B) {
	f := newFixture(b, fixtureOptions{})
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
	b.Run("delta304", func(b *testing.B) { poll(b, since(etag), "", http.StatusNotModified) })
	b.Run("ifnonematch304", func(b *testing.B) { poll(b, client.IndexPath, etag, http.StatusNotModified) })
	b.Run("delta", func(b *testing.B) { poll(b, since(old), "", http.StatusOK) })
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
