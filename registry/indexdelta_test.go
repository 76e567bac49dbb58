package registry

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// since is the query asking for the delta since the index whose ETag is etag.
func since(etag string) string {
	return client.IndexPath + "?" + client.SinceParam + "=" + strings.Trim(etag, `"`)
}

// delta fetches the delta since etag with key, requiring a 200 delta.
func (f *fixture) delta(key, etag string) (client.IndexDelta, reply) {
	f.t.Helper()
	got := f.do(request{path: since(etag), key: key})
	require.Equal(f.t, http.StatusOK, got.status, "delta: %s", got.body)
	require.Equal(f.t, strings.Trim(etag, `"`), got.header.Get(client.IndexSinceHeader))
	var d client.IndexDelta
	require.NoError(f.t, json.Unmarshal(got.body, &d))
	return d, got
}

func versions(es []client.IndexEntry) map[string]string {
	return listed(client.Index{Bundles: es})
}

// A delta lists what changed for the caller alone: a package published at
// a tier the caller's plan does not cover is not in it (control: a caller
// whose plan covers it gets it in its delta), and a tier change that hides
// a package the caller held is a removal (control: before the change, the
// same request is a 304).
func TestADeltaNamesOnlyTheCallersEntriesAndAPackageATierChangeHidesIsARemoval(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	f.publish("B", "1.0.0", "enterprise")
	free := f.instance("small", "free", "Plugins/*")
	pro := f.instance("big", "enterprise", "Plugins/*")
	_, freeAt := f.index(free)
	_, proAt := f.index(pro)

	f.publish("C", "1.0.0", "enterprise")
	f.publish("A", "2.0.0", "")
	d, got := f.delta(free, freeAt.header.Get("ETag"))
	assert.Equal(t, map[string]string{"A": "2.0.0"}, versions(d.Bundles))
	assert.Empty(t, d.Removed)
	assert.NotContains(t, string(got.body), `"C"`, "a package outside the caller's entitlement is not named")
	assert.NotContains(t, string(got.body), `"B"`)
	assert.Equal(t, 1, d.Count)
	full, now := f.index(free)
	assert.Equal(t, now.header.Get("ETag"), got.header.Get("ETag"), "the delta leads to the document a full request gets")
	assert.Equal(t, `"`+d.Digest+`"`, now.header.Get("ETag"))
	assert.Equal(t, map[string]string{"A": "2.0.0"}, listed(full))
	// Control: the same publications are in the delta of a caller entitled to C.
	proDelta, _ := f.delta(pro, proAt.header.Get("ETag"))
	assert.Equal(t, map[string]string{"A": "2.0.0", "C": "1.0.0"}, versions(proDelta.Bundles))

	held := got.header.Get("ETag")
	assert.Equal(t, http.StatusNotModified, f.do(request{path: since(held), key: free}).status, "control: nothing changed yet")
	f.putPackage(packageNode("A", `{"tier":"pro"}`))
	d, got = f.delta(free, held)
	assert.Empty(t, d.Bundles)
	assert.Equal(t, []string{"A"}, d.Removed, "a package the caller may no longer install is removed")
	assert.Equal(t, 0, d.Count)
	_, now = f.index(free)
	assert.Equal(t, now.header.Get("ETag"), got.header.Get("ETag"))
}

// A digest this server's history does not hold (another replica's, from
// before a restart, too old, or made up) is answered 410 Gone; one that is
// not a digest at all is a 400.
func TestASinceTheServerCannotAnswerIs410GoneAndAMalformedOneIs400(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	_, at := f.index(key)
	unknown := hex.EncodeToString(bytes.Repeat([]byte{7}, 32))
	got := f.do(request{path: since(unknown), key: key})
	assert.Equal(t, http.StatusGone, got.status)
	assert.Contains(t, string(got.body), "fetch the whole index")
	assert.Equal(t, http.StatusNotModified, f.do(request{path: since(at.header.Get("ETag")), key: key}).status, "control: a digest it holds")
	for _, bad := range []string{"xyz", unknown[:10], unknown + "00"} {
		assert.Equal(t, http.StatusBadRequest, f.do(request{path: since(bad), key: key}).status, "since=%s", bad)
	}
	assert.Equal(t, http.StatusUnauthorized, f.do(request{path: since(unknown)}).status, "no key: nothing is said")
}

// A since parameter in a query the server cannot read (a bad escape, a ';'
// separator, more parameters than net/url admits) is a 400 saying so,
// through the real server: never the whole index as if since were absent.
// Controls: the same digest in a plain query is answered (304), a query
// with the same faults that does not mention since is the whole index
// (200), and on 00b5dfb (the fault dropped in silence) each of the bad
// queries was answered 200 with the whole index.
func TestASinceParameterTheServerCannotReadIs400NotTheWholeIndex(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	_, at := f.index(key)
	etag := strings.Trim(at.header.Get("ETag"), `"`)
	overLimit := strings.Repeat("x&", 10000)
	for _, bad := range []string{
		client.SinceParam + "=%zz",
		client.SinceParam + "=" + etag + ";x",
		client.SinceParam + "=" + etag + "&" + overLimit,
	} {
		got := f.do(request{path: client.IndexPath + "?" + bad, key: key})
		require.Equal(t, http.StatusBadRequest, got.status, "query %.60q: %s", bad, got.body)
		assert.Contains(t, string(got.body), "the query could not be read, so neither could its since parameter")
	}
	assert.Equal(t, http.StatusNotModified, f.do(request{path: since(etag), key: key}).status, "control: the digest in a plain query")
	for _, noSince := range []string{"x=%zz", "x=1;y=2", overLimit + "y=1"} {
		got := f.do(request{path: client.IndexPath + "?" + noSince, key: key})
		assert.Equal(t, http.StatusOK, got.status, "control: no since, query %.60q: the whole index", noSince)
		assert.Equal(t, at.header.Get("ETag"), got.header.Get("ETag"))
	}
}

// countingHandler serves h, counting index requests with and without
// since, and lets a test rewrite delta answers.
type countingHandler struct {
	h             atomic.Pointer[http.Handler]
	deltas, fulls atomic.Int64
	tamper        func([]byte) []byte // rewrites a delta's body, when set
}

func (c *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == client.IndexPath {
		if r.URL.Query().Has(client.SinceParam) {
			c.deltas.Add(1)
		} else {
			c.fulls.Add(1)
		}
	}
	h := *c.h.Load()
	if c.tamper == nil || !r.URL.Query().Has(client.SinceParam) {
		h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	if rec.Code == http.StatusOK {
		body = c.tamper(body)
	}
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

func (c *countingHandler) requests() (deltas, fulls int64) { return c.deltas.Load(), c.fulls.Load() }

// consumer is a client.Client for key through a counting handler in front
// of f's server.
func (f *fixture) consumer(key string) (*client.Client, *countingHandler) {
	f.t.Helper()
	ch := &countingHandler{}
	h := f.server.Handler()
	ch.h.Store(&h)
	srv := testkit.Serve(f.t, ch)
	c, err := client.New(client.Options{BaseURL: srv.URL, Key: key, HTTPClient: srv.Client(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(f.t, err)
	f.t.Cleanup(c.CloseIdleConnections)
	return c, ch
}

// index fetches through c, bounded.
func indexVia(t *testing.T, c *client.Client, etag string) (client.Index, string, error) {
	t.Helper()
	type result struct {
		idx  client.Index
		etag string
		err  error
	}
	out := make(chan result, 1)
	go func() {
		idx, tag, err := c.Index(t.Context(), etag)
		out <- result{idx, tag, err}
	}()
	r := testkit.Receive(t, out, "the client's index")
	return r.idx, r.etag, r.err
}

// offlineRun makes changes to the index of an entitlement (round robin
// over modules: a tier change hides a package, the next shows it again;
// the catalog applies them without a re-derivation, so 1,000 take a
// second) while a steady consumer of the same entitlement polls after each
// one,
// then lets a consumer that was offline meanwhile catch up, and returns its
// requests and whether its index is the steady one's.
func offlineRun(t *testing.T, changes, modules int, history historyBound) (deltas, fulls int64, same bool) {
	f := newFixture(t, fixtureOptions{})
	f.server.index.history = history
	for m := range modules {
		f.publish(fmt.Sprintf("M%03d", m), "1.0.0", "")
	}
	f.publish("Z", "1.0.0", "") // hidden by the first change, for good: the first index never comes back
	key := f.instance("acme", "pro", "Plugins/*")
	offline, counted := f.consumer(key)
	_, tag, err := indexVia(t, offline, "")
	require.NoError(t, err)
	steady, _ := f.consumer(key)
	_, steadyTag, err := indexVia(t, steady, "")
	require.NoError(t, err)
	f.putPackage(packageNode("Z", `{"tier":"enterprise"}`))
	_, steadyTag, err = indexVia(t, steady, steadyTag)
	require.NoError(t, err)
	for k := range changes - 1 {
		tier := []string{"enterprise", ""}[(k/modules)%2]
		f.putPackage(packageNode(fmt.Sprintf("M%03d", k%modules), `{"tier":"`+tier+`"}`))
		_, steadyTag, err = indexVia(t, steady, steadyTag)
		require.NoError(t, err, "change %d", k)
	}
	d0, f0 := counted.requests()
	idx, tag, err := indexVia(t, offline, tag)
	require.NoError(t, err)
	want, wantTag, err := indexVia(t, steady, "")
	require.NoError(t, err)
	d1, f1 := counted.requests()
	return d1 - d0, f1 - f0, tag == wantTag && assert.ObjectsAreEqual(want, idx)
}

// A consumer that was offline for 1,000 changes to its index, while others of its
// entitlement kept polling (1,000 documents in the history), catches up
// with one delta request, and gets the document a full request gets.
// Control: with a history of 100 documents its generation is gone, and it
// takes one 410 and one full fetch — never a request per change.
func TestAConsumerOfflineForAThousandChangesCatchesUpWithOneRequest(t *testing.T) {
	start := time.Now()
	deltas, fulls, same := offlineRun(t, 1000, 48, defaultHistory)
	t.Logf("1,000 changes in %s", time.Since(start).Round(time.Millisecond))
	assert.True(t, same, "the index the delta gives is the whole one")
	assert.Equal(t, [2]int64{1, 0}, [2]int64{deltas, fulls}, "one delta request, no full fetch")

	deltas, fulls, same = offlineRun(t, 150, 48, historyBound{points: 100, keys: defaultHistory.keys})
	assert.True(t, same)
	assert.Equal(t, [2]int64{1, 1}, [2]int64{deltas, fulls}, "control: beyond the history, a 410 and one full fetch")
	// The bound on the names held does the same.
	deltas, fulls, same = offlineRun(t, 150, 48, historyBound{points: defaultHistory.points, keys: 100})
	assert.True(t, same)
	assert.Equal(t, [2]int64{1, 1}, [2]int64{deltas, fulls}, "control: beyond the history, a 410 and one full fetch")
}

// The client falls back to the whole index on a gap: a server whose
// history does not hold its index (another replica; control: the same
// change from the server it polled is one delta request), and a delta that
// does not digest to what the server says (a tampered one; control: applied
// without the check it gives another index).
func TestTheClientFallsBackToTheWholeIndexOnAGap(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	f.publish("B", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	c, counted := f.consumer(key)
	_, tag, err := indexVia(t, c, "")
	require.NoError(t, err)

	f.publish("C", "1.0.0", "")
	idx, tag, err := indexVia(t, c, tag)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"A": "1.0.0", "B": "1.0.0", "C": "1.0.0"}, listed(idx))
	deltas, fulls := counted.requests()
	assert.Equal(t, [2]int64{1, 1}, [2]int64{deltas, fulls}, "control: one delta from the server it polled")

	// Another replica over the same records: its history does not hold the
	// client's index.
	other, err := NewServer(ServerOptions{Served: f.served, Mesh: f.mesh, Clock: f.clk, Metrics: prometheus.NewRegistry(),
		Auth: &auth.Authenticator{Mesh: f.mesh, Clock: f.clk, Ladder: &auth.PlanTierLadder{Mesh: f.mesh, Clock: f.clk}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close(t.Context()) })
	h := other.Handler()
	counted.h.Store(&h)
	// The fixture waits for its own server's catalog; the client now polls
	// other, whose catalog learns a new package on its own goroutine (a
	// package it does not know yet is served to nobody): wait for it too.
	knows := func(plugins ...string) {
		t.Helper()
		require.Eventually(t, func() bool {
			st, ok := other.catalog.current()
			if !ok {
				return false
			}
			for _, p := range plugins {
				if st.lookup(p).unreadable {
					return false
				}
			}
			return true
		}, testkit.Bound, time.Millisecond, "the other replica's catalog knows %v", plugins)
	}
	f.publish("D", "1.0.0", "")
	knows("A", "B", "C", "D")
	idx, tag, err = indexVia(t, c, tag)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"A": "1.0.0", "B": "1.0.0", "C": "1.0.0", "D": "1.0.0"}, listed(idx))
	deltas, fulls = counted.requests()
	assert.Equal(t, [2]int64{2, 2}, [2]int64{deltas, fulls}, "a 410, then the whole index")

	// A delta that lost an entry on the way.
	var (
		mu       sync.Mutex
		tampered client.IndexDelta
	)
	counted.tamper = func(body []byte) []byte {
		var d client.IndexDelta
		require.NoError(t, json.Unmarshal(body, &d))
		d.Bundles = d.Bundles[1:]
		mu.Lock()
		tampered = d
		mu.Unlock()
		out, _ := json.Marshal(d)
		return out
	}
	f.publish("A", "2.0.0", "")
	f.publish("E", "1.0.0", "")
	knows("A", "B", "C", "D", "E")
	held := listed(idx)
	idx, _, err = indexVia(t, c, tag)
	require.NoError(t, err)
	want := map[string]string{"A": "2.0.0", "B": "1.0.0", "C": "1.0.0", "D": "1.0.0", "E": "1.0.0"}
	assert.Equal(t, want, listed(idx))
	deltas, fulls = counted.requests()
	assert.Equal(t, [2]int64{3, 3}, [2]int64{deltas, fulls}, "the tampered delta, then the whole index")
	mu.Lock()
	for name, v := range versions(tampered.Bundles) {
		held[name] = v
	}
	mu.Unlock()
	assert.NotEqual(t, want, held, "control: the tampered delta applied as it is gives another index")
}

// The Reconciler, unchanged, keeps a consumer current on top of the
// client's deltas: after its first poll (the whole index) each publication
// reaches Apply through one delta request, and a poll with nothing new is a
// 304 to its delta request. Control: the first poll, holding nothing, is a
// whole-index request.
func TestTheReconcilerKeepsAConsumerCurrentThroughDeltas(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	c, counted := f.consumer(key)
	clk := rxtest.NewClock()
	polls := make(chan client.ReconcilerStatus, 4)
	const every = time.Minute
	r := &client.Reconciler{Client: c, Interval: every, Clock: clk, TempDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
		Apply:  func(context.Context, client.IndexEntry, io.Reader) error { return nil },
		Polled: func(st client.ReconcilerStatus) { polls <- st }}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		testkit.Receive(t, done, "Run returning once stopped")
	})
	st := testkit.Receive(t, polls, "the first poll")
	assert.Equal(t, map[string]string{"A": "1.0.0"}, st.Applied)
	deltas, fulls := counted.requests()
	assert.Equal(t, [2]int64{0, 1}, [2]int64{deltas, fulls}, "control: the first poll fetches the whole index")

	f.publish("B", "1.0.0", "")
	f.publish("A", "2.0.0", "")
	clk.Advance(every)
	st = testkit.Receive(t, polls, "the second poll")
	assert.True(t, st.Healthy, st.LastError)
	assert.Equal(t, map[string]string{"A": "2.0.0", "B": "1.0.0"}, st.Applied)
	deltas, fulls = counted.requests()
	assert.Equal(t, [2]int64{1, 1}, [2]int64{deltas, fulls}, "one delta request for the two publications")

	clk.Advance(every)
	st = testkit.Receive(t, polls, "the third poll")
	assert.True(t, st.Healthy, st.LastError)
	deltas, fulls = counted.requests()
	assert.Equal(t, [2]int64{2, 1}, [2]int64{deltas, fulls}, "nothing new: one delta request, answered 304")
}
