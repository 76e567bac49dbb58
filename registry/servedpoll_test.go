package registry

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/registry/client"
)

// servedPollCost runs the poll f n times on one P and returns what each
// allocated (testing.AllocsPerRun, with the bytes too).
func servedPollCost(n int, f func()) (allocs, bytes float64) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f() // warm: first-use allocations are not per poll
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(n), float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
}

// Every poll makes these allocations: at 256 pollers every 100 ms they are
// what the collector works through, and its cycles set the served p99 at
// 10,000 modules. Where the snapshot and the catalog were each read as a
// stream (three operators and a ledger stage each), the entitlement key
// built with fmt and hex, the since parameter parsed into a url.Values and
// each header value its own slice, a poll answered 304 made 160
// allocations and 10.3 KB (BenchmarkAServedPoll/delta304 at 66bbd3a, the
// same fixture and request): the bounds below fail for that code.
func TestAPollOfAnUnchangedIndexAllocatesAThirdLessThanWithAStreamPerRead(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	for i := range 20 {
		f.publish("Module"+strconv.Itoa(i), "1.0.0", "")
	}
	key := f.instance("acme", "pro", "Plugins/*")
	_, got := f.index(key)
	etag := got.header.Get("ETag")
	h := f.server.Handler()
	req := httptest.NewRequest(http.MethodGet, client.IndexPath+"?"+client.SinceParam+"="+strings.Trim(etag, `"`), nil)
	req.Header.Set("Authorization", "Bearer "+key)
	w := &pollWriter{header: http.Header{}}
	allocs, bytes := servedPollCost(300, func() {
		clear(w.header)
		w.status = 0
		h.ServeHTTP(w, req)
	})
	require.Equal(t, http.StatusNotModified, w.status, "the poll holds the newest document")
	require.Equal(t, etag, w.header.Get("ETag"))
	t.Logf("a poll answered 304: %.0f allocations, %.0f bytes", allocs, bytes)
	assert.LessOrEqual(t, allocs, 105.0, "allocations per poll (160 with a stream per read)")
	assert.LessOrEqual(t, bytes, 7700.0, "bytes per poll (10.3 KB with a stream per read)")
}

// A warm poll on a store that gates the authentication's node types (as
// examples/registry and examples/loadtest open theirs) is answered from
// the decision the authenticator kept for the key, with no stream for the
// authentication and none for the answer (answer.Now), and the 304's
// header built once per document: 17 allocations and 1.4 KB
// (BenchmarkAServedPoll/delta304), against 96 and 6,962 bytes at 658dd9b
// (the same fixture and request). The bounds below hold that at under a
// quarter of the allocations and a third of the bytes. Negative control,
// run here: the same poll on a store that does not gate them (every poll
// reads its instance and grant as streams) exceeds both bounds.
func TestAWarmPollFromAKeptDecisionAllocatesUnderAQuarterOfAPollThatReadsItsLegs(t *testing.T) {
	const maxAllocs, maxBytes = 24.0, 2300.0
	for _, gated := range []bool{true, false} {
		f := pollFixture(t, gated)
		for i := range 20 {
			f.publish("Module"+strconv.Itoa(i), "1.0.0", "")
		}
		key := f.instance("acme", "pro", "Plugins/*")
		_, got := f.index(key)
		etag := got.header.Get("ETag")
		h := f.server.Handler()
		req := httptest.NewRequest(http.MethodGet, client.IndexPath+"?"+client.SinceParam+"="+strings.Trim(etag, `"`), nil)
		req.Header.Set("Authorization", "Bearer "+key)
		w := &pollWriter{header: http.Header{}}
		allocs, bytes := servedPollCost(300, func() {
			clear(w.header)
			w.status = 0
			h.ServeHTTP(w, req)
		})
		require.Equal(t, http.StatusNotModified, w.status, "the poll holds the newest document")
		require.Equal(t, etag, w.header.Get("ETag"))
		t.Logf("gated=%v: a poll answered 304: %.0f allocations, %.0f bytes", gated, allocs, bytes)
		if !gated {
			assert.Greater(t, allocs, maxAllocs, "negative control: a poll that reads its legs")
			assert.Greater(t, bytes, maxBytes, "negative control: a poll that reads its legs")
			continue
		}
		assert.LessOrEqual(t, allocs, maxAllocs, "allocations per poll (96 at 658dd9b)")
		assert.LessOrEqual(t, bytes, maxBytes, "bytes per poll (6,962 at 658dd9b)")
	}
}
