package registry

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

const testPublishToken = "publish-token-for-tests"

// watchedMesh is the real store with every read counted, and, where a test
// says so, a read replaced: the package catalog's query, or the point reads
// of one path.
type watchedMesh struct {
	mesh.Store
	gets, queries  atomic.Int64
	catalogQueries atomic.Int64 // queries for package nodes

	mu       sync.Mutex
	catalogQ func() rx.Observable[mesh.Change] // replaces the package catalog's query
	stallGet string                            // a Get of this path never answers
	stalled  chan string                       // told the path of a stalled Get

	// frames is told, without blocking, each time a package-node query's
	// subscriber has returned from a frame: the catalog has applied it.
	frames chan struct{}
}

// afterEachFrame delivers src's frames and then tells frames.
type afterEachFrame struct {
	src    rx.Observable[mesh.Change]
	frames chan struct{}
}

func (a afterEachFrame) Subscribe(o rx.Observer[mesh.Change]) rx.Subscription {
	return a.src.Subscribe(rx.NewObserver(func(c mesh.Change) {
		o.OnNext(c)
		select {
		case a.frames <- struct{}{}:
		default:
		}
	}, o.OnError, o.OnCompleted))
}

func (m *watchedMesh) Get(path string) rx.Observable[mesh.Node] {
	m.gets.Add(1)
	m.mu.Lock()
	stall, stalled := m.stallGet, m.stalled
	m.mu.Unlock()
	if stall != "" && path == stall {
		return rx.Defer(func() rx.Observable[mesh.Node] {
			select {
			case stalled <- path:
			default:
			}
			return rx.Never[mesh.Node]()
		})
	}
	return m.Store.Get(path)
}

func (m *watchedMesh) Query(q string) rx.Observable[mesh.Change] {
	m.queries.Add(1)
	if strings.Contains(q, "nodeType:"+PackageNodeType) {
		m.catalogQueries.Add(1)
	}
	m.mu.Lock()
	replace := m.catalogQ
	m.mu.Unlock()
	if replace != nil && strings.Contains(q, "nodeType:"+PackageNodeType) {
		return replace()
	}
	if m.frames != nil && strings.Contains(q, "nodeType:"+PackageNodeType) {
		return afterEachFrame{src: m.Store.Query(q), frames: m.frames}
	}
	return m.Store.Query(q)
}

// reads is how many point reads and queries the mesh has served.
func (m *watchedMesh) reads() (gets, queries int64) { return m.gets.Load(), m.queries.Load() }

// fixture is a registry on real parts: memstore, a ModuleLanding on a
// temporary directory, the real authenticator, a real HTTP server, and the
// virtual clock for every budget.
type fixture struct {
	t       testing.TB
	clk     *rxtest.Clock
	store   mesh.Store
	mesh    *watchedMesh
	volume  *testkit.CountedVolume
	root    string
	landing *landing.ModuleLanding
	served  *ServedActivation
	reg     *auth.Instances
	server  *Server
	http    *httptest.Server
	metrics *prometheus.Registry
	logs    *testkit.Logs
}

type fixtureOptions struct {
	store  mesh.Store                          // the mesh, when not a fresh memstore (the test owns it)
	root   string                              // the volume's directory, when not a fresh one (a replica's)
	volume func(landing.Volume) landing.Volume // wraps the volume the landing works on
	mesh   func(*watchedMesh)                  // adjusts the mesh before the server starts
	server func(*ServerOptions)                // adjusts the server's options
	served func(*ServedOptions)                // adjusts the served activation's options
}

func newFixture(t testing.TB, fo fixtureOptions) *fixture {
	t.Helper()
	f := &fixture{t: t, clk: rxtest.NewClock(), root: fo.root, metrics: prometheus.NewRegistry()}
	if f.root == "" {
		f.root = t.TempDir()
	}
	f.store = fo.store
	if f.store == nil {
		store, err := memstore.New(memstore.Options{Clock: f.clk})
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		f.store = store
	}
	store := f.store
	f.mesh = &watchedMesh{Store: store, frames: make(chan struct{}, 1)}
	f.reg = &auth.Instances{Mesh: store, Clock: f.clk}
	for _, tier := range []auth.PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 1}, {ID: "enterprise", Rank: 2}} {
		require.NoError(t, f.reg.SetPlanTier(t.Context(), tier))
	}

	var err error
	f.volume = testkit.CountingVolume(landing.DirVolume(f.root))
	var v landing.Volume = f.volume
	if fo.volume != nil {
		v = fo.volume(v)
	}
	f.landing, err = landing.NewModuleLanding(v, landing.Options{Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.landing.Close() })
	var logger *slog.Logger
	f.logs, logger = testkit.CaptureLogs()
	// The journal's tail reads the volume on its own goroutine; the tests
	// that count volume operations around a request run without it, and
	// those about the tail opt in.
	so := ServedOptions{Clock: f.clk, Logger: logger, JournalPeriod: NoJournal}
	if fo.served != nil {
		fo.served(&so)
	}
	f.served = NewServedActivation(f.landing, so)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
		defer cancel()
		assert.NoError(t, f.served.Close(ctx), "a derivation outlived the test")
	})
	if fo.mesh != nil {
		fo.mesh(f.mesh)
	}
	ladder := &auth.PlanTierLadder{Mesh: f.mesh, Clock: f.clk}
	opts := ServerOptions{
		Served:       f.served,
		Auth:         &auth.Authenticator{Mesh: f.mesh, Clock: f.clk, Ladder: ladder},
		Mesh:         f.mesh,
		PublishToken: testPublishToken,
		Clock:        f.clk,
		Logger:       logger,
		Metrics:      f.metrics,
		Version:      "test-1.0",
	}
	if fo.server != nil {
		fo.server(&opts)
	}
	f.server, err = NewServer(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.server.Close(context.Background()) })
	f.http = httptest.NewServer(f.server.Handler())
	t.Cleanup(f.http.Close)
	return f
}

// instance registers an instance on plan with grant entries and returns a
// key for it.
func (f *fixture) instance(id, plan string, grant ...string) string {
	f.t.Helper()
	ctx := f.t.Context()
	_, err := f.reg.Register(ctx, id, id, plan)
	require.NoError(f.t, err)
	key, err := f.reg.IssueKey(ctx, id)
	require.NoError(f.t, err)
	_, err = f.reg.SetGrant(ctx, id, "test", grant...)
	require.NoError(f.t, err)
	return key
}

// publish lands a version through the served activation and records its
// package node with tier, as the publish route does.
func (f *fixture) publish(module, version, tier string) (landing.Record, []byte) {
	f.t.Helper()
	archive := testBundle(f.t, module, version)
	rec, err := f.served.Land(f.t.Context(), module, version, archive)
	require.NoError(f.t, err)
	content, err := json.Marshal(PackageContent{Tier: tier})
	require.NoError(f.t, err)
	node := mesh.Node{Path: DefaultSource + "/" + module, NodeType: PackageNodeType, Content: content}
	put := func() {
		_, err := f.store.Put(f.t.Context(), node)
		require.NoError(f.t, err)
	}
	// The store delivers the package node to the catalog on the live
	// query's own goroutine: wait for it while the catalog is live, so the
	// next read sees the package. Not while it is down (some tests publish
	// then), nor when the node is already as written (no frame comes).
	prev, err := rx.First(f.t.Context(), f.store.Get(node.Path))
	unchanged := err == nil && prev.NodeType == node.NodeType && string(prev.Content) == string(content)
	if complete, _ := f.server.catalog.Complete(); complete && !unchanged {
		f.catalogApplies(put)
	} else {
		put()
	}
	return rec, archive
}

// putPackage writes a package node and waits for the server's catalog to
// apply it: the store delivers the change to the catalog's live query on
// the query's own goroutine.
func (f *fixture) putPackage(n mesh.Node) {
	f.t.Helper()
	f.catalogApplies(func() {
		_, err := f.store.Put(f.t.Context(), n)
		require.NoError(f.t, err)
	})
}

// deletePackage deletes a package node and waits for the catalog to apply it.
func (f *fixture) deletePackage(path string) {
	f.t.Helper()
	f.catalogApplies(func() { require.NoError(f.t, f.store.Delete(f.t.Context(), path)) })
}

// catalogApplies runs write and waits at most testkit.Bound for the
// server's catalog to apply a frame after it.
func (f *fixture) catalogApplies(write func()) {
	f.t.Helper()
	version := func() uint64 {
		if st, ok := f.server.catalog.current(); ok {
			return st.version
		}
		return 0
	}
	before := version()
	write()
	for version() <= before {
		testkit.Receive(f.t, f.mesh.frames, "the package catalog applying the write")
	}
}

// testBundle is a small archive for module at version.
func testBundle(tb testing.TB, module, version string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"MANIFEST", "lib/main.txt"} {
		w, err := zw.Create(name)
		require.NoError(tb, err)
		_, err = w.Write(testkit.FileBody(module, version, name))
		require.NoError(tb, err)
	}
	require.NoError(tb, zw.Close())
	return buf.Bytes()
}

// request is one HTTP request of a test.
type request struct {
	method string
	path   string // may carry an escaped path and a query
	key    string // instance key, sent as a bearer token
	header http.Header
	body   []byte
}

// send makes the request in the background; the reply arrives on the
// channel. It ends with the test's context at the latest.
func (f *fixture) send(req request) <-chan reply {
	out := make(chan reply, 1)
	ctx := f.t.Context()
	go func() {
		method := req.method
		if method == "" {
			method = http.MethodGet
		}
		var body io.Reader
		if req.body != nil {
			body = bytes.NewReader(req.body)
		}
		r, err := http.NewRequestWithContext(ctx, method, f.http.URL+req.path, body)
		if err != nil {
			out <- reply{err: err}
			return
		}
		for k, vs := range req.header {
			r.Header[k] = vs
		}
		if req.key != "" {
			r.Header.Set("Authorization", "Bearer "+req.key)
		}
		resp, err := f.http.Client().Do(r)
		if err != nil {
			out <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		out <- reply{status: resp.StatusCode, header: resp.Header, body: data, err: err}
	}()
	return out
}

// do makes the request and waits, at most bound, for its reply.
func (f *fixture) do(req request) reply {
	f.t.Helper()
	var got reply
	select {
	case got = <-f.send(req):
	case <-time.After(testkit.Bound):
		require.FailNow(f.t, "bounded wait tripped", "%s %s got no reply within %s", req.method, req.path, testkit.Bound)
	}
	require.NoError(f.t, got.err)
	return got
}

// index fetches the index with key and decodes it, requiring a 200.
func (f *fixture) index(key string) (client.Index, reply) {
	f.t.Helper()
	got := f.do(request{path: client.IndexPath, key: key})
	require.Equal(f.t, http.StatusOK, got.status, "index: %s", got.body)
	var idx client.Index
	require.NoError(f.t, json.Unmarshal(got.body, &idx))
	return idx, got
}

// listed maps each plugin in idx to its version.
func listed(idx client.Index) map[string]string {
	out := map[string]string{}
	for _, b := range idx.Bundles {
		out[b.Plugin] = b.Version
	}
	return out
}

func TestVersionAnswersWithoutAKeyOrAnyRead(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	gets, queries := f.mesh.reads()
	got := f.do(request{path: VersionPath})
	require.Equal(t, http.StatusOK, got.status)
	var v struct{ Version string }
	require.NoError(t, json.Unmarshal(got.body, &v))
	assert.Equal(t, "test-1.0", v.Version)
	g2, q2 := f.mesh.reads()
	assert.Equal(t, [2]int64{gets, queries}, [2]int64{g2, q2}, "the version route reads nothing")
}

func TestReadyzSaysOKOnlyWhileTheCatalogIsLiveAndHealthzAnswersAlike(t *testing.T) {
	queries := make(chan *rx.Subject[mesh.Change], 4)
	f := newFixture(t, fixtureOptions{mesh: func(m *watchedMesh) {
		m.catalogQ = func() rx.Observable[mesh.Change] {
			s := rx.NewSubject[mesh.Change]()
			queries <- s
			return s
		}
	}})
	first := testkit.Receive(t, queries, "the catalog's live query")

	// Before the catalog's first answer, health names it as missing.
	got := f.do(request{path: ReadyPath})
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	assert.Contains(t, string(got.body), CheckCatalog)
	assert.NotContains(t, string(got.body), CheckSnapshot, "the snapshot is readable")

	first.OnNext(mesh.Change{Kind: mesh.Initial})
	f.clk.Advance(ReadinessReuse) // the last outcome answers for ReadinessReuse
	got = f.do(request{path: ReadyPath})
	assert.Equal(t, http.StatusOK, got.status, "%s", got.body)

	// The live query fails: health says so until the retry is live again.
	first.OnError(&mesh.ProviderStalledError{Providers: []string{"memstore"}, Budget: 15 * time.Second, Query: "namespace:Plugins nodeType:Package"})
	f.clk.Advance(ReadinessReuse)
	got = f.do(request{path: ReadyPath})
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	assert.Contains(t, string(got.body), CheckCatalog)
	assert.NotContains(t, string(got.body), "memstore", "no internal text in the answer")
	assert.Equal(t, got.status, f.do(request{path: HealthPath}).status, "/healthz answers as /readyz")

	f.clk.Advance(DefaultCatalogRetry)
	retry := testkit.Receive(t, queries, "the catalog's retried query")
	retry.OnNext(mesh.Change{Kind: mesh.Initial})
	got = f.do(request{path: ReadyPath})
	assert.Equal(t, http.StatusOK, got.status, "%s", got.body)
}

func TestAStalledActivationListAnswers503NamingItWithinTheBudget(t *testing.T) {
	gate := testkit.NewReleaser(t)
	var gated *testkit.GatedVolume
	f := newFixture(t, fixtureOptions{volume: func(v landing.Volume) landing.Volume {
		gated = &testkit.GatedVolume{Volume: v, Dir: modulesDir}
		return gated
	}})
	key := f.instance("acme", "pro", "Plugins/*")
	scanning := gated.Arm(gate)

	replies := f.send(request{path: client.IndexPath, key: key})
	testkit.Receive(t, scanning, "the index request's derivation reaching the volume")

	f.clk.Advance(IndexBudget - time.Nanosecond)
	// The request is still held a nanosecond before its budget (the
	// warning's elapsed time below pins the instant it was refused: the
	// timer runs at its due time). Without the deadline it would be held for
	// as long as the volume is, and the receive below would trip.
	assert.Empty(t, replies, "the request was answered before its budget ran out")

	f.clk.Advance(time.Nanosecond)
	got := testkit.Receive(t, replies, "the refusal at the budget")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	assert.NotEmpty(t, got.header.Get("Retry-After"))
	assert.Equal(t, []string{StageActivation}, got.refusal(t).WaitingOn)

	warns := f.logs.At(slog.LevelWarn)
	require.Len(t, warns, 1, "one warning for one refusal")
	assert.Equal(t, StageActivation, warns[0].Attrs["stage"].String())
	assert.Equal(t, IndexBudget, warns[0].Attrs["elapsed"].Duration())
	assert.Equal(t, 1.0, counter(t, f, "meshrx_registry_unavailable_total", map[string]string{"route": routeIndex, "stage": StageActivation}))
	gate.Release()
}

// catalogWaits waits at most testkit.Bound for the n-th reader to log that
// it waits for the catalog's first answer.
func catalogWaits(t *testing.T, f *fixture, n int, what string) {
	t.Helper()
	for len(f.logs.Matching(slog.LevelDebug, catalogWaitMessage)) < n {
		testkit.Receive(t, f.logs.Added, what)
	}
}

func TestAnIndexRequestWaitsForTheCatalogsFirstAnswerOnlyWithinItsBudget(t *testing.T) {
	queries := make(chan *rx.Subject[mesh.Change], 2)
	f := newFixture(t, fixtureOptions{mesh: func(m *watchedMesh) {
		m.catalogQ = func() rx.Observable[mesh.Change] {
			s := rx.NewSubject[mesh.Change]()
			queries <- s
			return s
		}
	}})
	key := f.instance("acme", "pro", "Plugins/*")
	f.publish("Acme.Crm", "1.0.0", "")
	catalogQuery := testkit.Receive(t, queries, "the catalog's live query")

	replies := f.send(request{path: client.IndexPath, key: key})
	catalogWaits(t, f, 1, "the index request waiting for the catalog")
	f.clk.Advance(IndexBudget - time.Nanosecond)
	assert.Empty(t, replies, "answered before the budget ran out")
	f.clk.Advance(time.Nanosecond)
	got := testkit.Receive(t, replies, "the refusal")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	assert.Equal(t, []string{StageCatalog}, got.refusal(t).WaitingOn)

	// A request waiting when the first answer arrives is answered by it.
	replies = f.send(request{path: client.IndexPath, key: key})
	catalogWaits(t, f, 2, "the second request waiting for the catalog")
	catalogQuery.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{{
		ID: "Acme.Crm", Namespace: DefaultSource, Path: DefaultSource + "/Acme.Crm", NodeType: PackageNodeType, Content: json.RawMessage(`{"tier":""}`),
	}}})
	got = testkit.Receive(t, replies, "the answer once the catalog answered")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusOK, got.status, "%s", got.body)
	assert.Contains(t, string(got.body), "Acme.Crm")
}

func TestAnUnavailableAuthenticationLegIsA503NamingItNeverA401(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	key := f.instance("acme", "pro", "Plugins/*")
	stalled := make(chan string, 1)
	f.mesh.mu.Lock()
	f.mesh.stallGet, f.mesh.stalled = auth.GrantPath("acme"), stalled
	f.mesh.mu.Unlock()

	replies := f.send(request{path: client.IndexPath, key: key})
	testkit.Receive(t, stalled, "the grant leg being read")
	f.clk.Advance(auth.DefaultReadBudget)
	got := testkit.Receive(t, replies, "the answer once the grant leg's budget ran out")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.status, "could not find out is never a 401")
	assert.Equal(t, "5", got.header.Get("Retry-After"))
	assert.Contains(t, string(got.body), StageAuthentication)
	assert.Contains(t, string(got.body), auth.StageGrant)
	assert.Contains(t, string(got.body), "NOT a statement about your key")

	// Control: the same key with the leg answering is authenticated.
	f.mesh.mu.Lock()
	f.mesh.stallGet = ""
	f.mesh.mu.Unlock()
	_, ok := f.index(key)
	assert.Equal(t, http.StatusOK, ok.status)
}

func TestNewServerNamesTheOptionItCannotUse(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	complete := ServerOptions{Served: f.served, Auth: f.server.auth, Mesh: f.mesh, Metrics: prometheus.NewRegistry(), Clock: f.clk}
	for setting, breakIt := range map[string]func(*ServerOptions){
		"ServerOptions.Served":      func(o *ServerOptions) { o.Served = nil },
		"ServerOptions.Auth":        func(o *ServerOptions) { o.Auth = nil },
		"ServerOptions.Mesh":        func(o *ServerOptions) { o.Mesh = nil },
		"ServerOptions.Source":      func(o *ServerOptions) { o.Source = "../etc" },
		"ServerOptions.IndexBudget": func(o *ServerOptions) { o.IndexBudget = -time.Second },
	} {
		opts := complete
		breakIt(&opts)
		_, err := NewServer(opts)
		var cfg *ConfigError
		require.ErrorAs(t, err, &cfg, setting)
		assert.Equal(t, setting, cfg.Setting)
	}
	// Control: the complete options make a server.
	s, err := NewServer(complete)
	require.NoError(t, err)
	require.NoError(t, s.Close(t.Context()))
}
