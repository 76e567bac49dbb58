package registry

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/meshrx/meshrx/registry/client"
)

// BenchmarkIndexServedFromTheSnapshot is the served index's cost inside the
// server, without the network: authentication on memstore, the snapshot,
// the catalog and the kept document.
func BenchmarkIndexServedFromTheSnapshot(b *testing.B) {
	f := newFixture(b, fixtureOptions{})
	for i := range 50 {
		f.publish("Module"+strconv.Itoa(i), "1.0.0", "")
	}
	key := f.instance("acme", "pro", "Plugins/*")
	_, got := f.index(key)
	b.Run("200", func(b *testing.B) { benchIndex(b, f, key, "") })
	b.Run("304", func(b *testing.B) { benchIndex(b, f, key, got.header.Get("ETag")) })
}

func benchIndex(b *testing.B, f *fixture, key string, etag string) {
	h := f.server.Handler()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, client.IndexPath, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK && w.Code != http.StatusNotModified {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
