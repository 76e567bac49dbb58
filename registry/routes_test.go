package registry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/token"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// The route table: every route Server.routes registers has a row, and every
// row is run against the same attacker's requests (the route rules below).
// TestEveryRouteTheServerRegistersIsInTheRouteTable fails when a route has
// none; TestTheRouteRulesCatchBrokenHandlers runs the rules over handlers
// broken on purpose (their negative controls).

// routeRow is one route, as a request that reaches it.
type routeRow struct {
	route   string // the label Server.instrument counts it under
	method  string
	path    string // without a query
	query   string // what a successful request adds, without '?'
	auth    string // "key", "token", or "" when the route answers anyone
	metrics bool   // served by MetricsHandler, not Handler
	status  int    // the answer to a request with its credentials
	body    bool   // whether the route reads a request body
	// budget is the route's answer budget on the server's clock; zero for
	// a route that reads nothing (answered whatever stalls).
	budget time.Duration
}

func routeTable() []routeRow {
	return []routeRow{
		{route: routeIndex, method: http.MethodGet, path: client.IndexPath, auth: "key", status: http.StatusOK, budget: IndexBudget},
		{route: routeBundle, method: http.MethodGet, path: client.BundlesPath + "/Acme.Crm/1.0.0", auth: "key", status: http.StatusOK, budget: DownloadBudget},
		{route: routePublish, method: http.MethodPost, path: client.BundlesPath + "/Acme.New", query: "version=1.0.%d", auth: "token", status: http.StatusCreated, body: true,
			budget: DownloadBudget + landing.CommitBudget + publishAnswerMargin},
		{route: routeVersion, method: http.MethodGet, path: VersionPath, status: http.StatusOK},
		{route: routeLive, method: http.MethodGet, path: LivePath, status: http.StatusOK},
		{route: routeReady, method: http.MethodGet, path: ReadyPath, status: http.StatusOK, budget: healthBudget},
		{route: routeHealth, method: http.MethodGet, path: HealthPath, status: http.StatusOK, budget: healthBudget},
		{route: routeMetrics, method: http.MethodGet, path: MetricsPath, metrics: true, status: http.StatusOK},
	}
}

// routeTarget is a registry behind real HTTP servers: the public handler
// and the metrics handler, each possibly wrapped (the controls break them
// that way).
type routeTarget struct {
	f               *fixture
	public, metrics *httptest.Server
	key             string
	hc              *http.Client
	wrap            func(http.Handler) http.Handler
	// stall, once stored true, makes every read and write of the mesh and
	// of the volume wait until its caller gives up (see stallingStore).
	stall *atomic.Bool

	mu        sync.Mutex
	published int // versions of Acme.New published so far
}

func newRouteTarget(t *testing.T, wrap func(http.Handler) http.Handler) *routeTarget {
	t.Helper()
	if wrap == nil {
		wrap = func(h http.Handler) http.Handler { return h }
	}
	stall := &atomic.Bool{}
	t.Cleanup(func() { stall.Store(false) })
	store, err := memstore.New(memstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	f := newFixture(t, fixtureOptions{
		store:  stallingStore{Store: store, stall: stall},
		volume: func(v landing.Volume) landing.Volume { return stallingVolume{Volume: v, stall: stall} },
	})
	rt := &routeTarget{f: f, key: f.instance("acme", "pro", "Plugins/*"), wrap: wrap, stall: stall}
	f.publish("Acme.Crm", "1.0.0", "")
	rt.public = httptest.NewServer(wrap(f.server.Handler()))
	t.Cleanup(rt.public.Close)
	rt.metrics = httptest.NewServer(wrap(f.server.MetricsHandler()))
	t.Cleanup(rt.metrics.Close)
	// Redirects are answers of their own here, not followed.
	rt.hc = &http.Client{
		Timeout:       testkit.Bound,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return rt
}

func (rt *routeTarget) base(row routeRow) string {
	if row.metrics {
		return rt.metrics.URL
	}
	return rt.public.URL
}

// routeCall is a request to one row, varied by a rule.
type routeCall struct {
	ctx    context.Context // the test's when nil
	method string          // the row's when empty
	path   string          // the row's when empty
	host   string
	noAuth bool
}

type routeReply struct {
	status int
	header http.Header
	body   []byte
}

// call makes c against row: with the row's credentials unless c.noAuth,
// and for a route that reads a body, a fresh publication (a new version
// each time, so that every successful one is a 201).
func (rt *routeTarget) call(r reporter, row routeRow, c routeCall) (routeReply, bool) {
	r.Helper()
	method, path := c.method, c.path
	if method == "" {
		method = row.method
	}
	if path == "" {
		path = row.path
	}
	var body io.Reader
	query := row.query
	if row.body {
		rt.mu.Lock()
		rt.published++
		n := rt.published
		rt.mu.Unlock()
		query = fmt.Sprintf(row.query, n)
		body = bytes.NewReader(testkit.ModuleArchive(rt.f.t, "Acme.New", fmt.Sprintf("1.0.%d", n), 1))
	}
	u := rt.base(row) + path
	if query != "" {
		u += "?" + query
	}
	ctx := c.ctx
	if ctx == nil {
		ctx = rt.f.t.Context()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		r.Errorf("%s: building %s %s: %v", row.route, method, u, err)
		return routeReply{}, false
	}
	if c.host != "" {
		req.Host = c.host
	}
	if !c.noAuth {
		switch row.auth {
		case "key":
			req.Header.Set("Authorization", "Bearer "+rt.key)
		case "token":
			req.Header.Set("Authorization", "Bearer "+testPublishToken)
		}
	}
	resp, err := rt.hc.Do(req)
	if err != nil {
		r.Errorf("%s: %s %s: %v", row.route, method, u, err)
		return routeReply{}, false
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		r.Errorf("%s: reading the answer to %s %s: %v", row.route, method, u, err)
		return routeReply{}, false
	}
	return routeReply{status: resp.StatusCode, header: resp.Header, body: data}, true
}

// reporter is what a route rule reports to: a *testing.T, or a collector in
// the controls.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

type collector struct {
	mu     sync.Mutex
	failed []string
}

func (c *collector) Helper() {}
func (c *collector) Errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed = append(c.failed, fmt.Sprintf(format, args...))
}

// routeRule is one line of the attacker's schedule every route keeps.
type routeRule struct {
	name    string
	applies func(routeRow) bool
	check   func(r reporter, rt *routeTarget, row routeRow)
	// parallel: the rule's rows may run at once (it waits in real time and
	// reads nothing another row changes).
	parallel bool
}

func anyRoute(routeRow) bool { return true }

func routeRules() []routeRule {
	return []routeRule{
		{"it answers its credentials and refuses their absence", anyRoute, ruleCredentials, false},
		{"no variant of its path reaches it", anyRoute, ruleNoVariantReachesIt, false},
		{"a method it has not is a 405 naming the ones it has", anyRoute, ruleMethodNotAllowed, false},
		{"a HEAD answers as its GET without a body", func(row routeRow) bool { return row.method == http.MethodGet }, ruleHead, false},
		{"a Host header naming another host changes nothing", anyRoute, ruleHostIgnored, false},
		{"a body it does not read is not waited for", func(row routeRow) bool { return !row.body }, ruleUnreadBody, true},
		{"its answers are counted under its label", anyRoute, ruleCounted, false},
		{"with everything it reads stalled it answers by its budget", anyRoute, ruleAnswersWhileEverythingStalls, false},
	}
}

// ruleCredentials: the row's request with its credentials gets the row's
// status; without them, a route that needs them answers 401 (naming no
// more than that), and one that needs none answers as with them.
func ruleCredentials(r reporter, rt *routeTarget, row routeRow) {
	r.Helper()
	if got, ok := rt.call(r, row, routeCall{}); ok && got.status != row.status {
		r.Errorf("%s: %s %s with its credentials: status %d, want %d (%s)", row.route, row.method, row.path, got.status, row.status, got.body)
	}
	want := row.status
	if row.auth != "" {
		want = http.StatusUnauthorized
	}
	if got, ok := rt.call(r, row, routeCall{noAuth: true}); ok && got.status != want {
		r.Errorf("%s: %s %s without credentials: status %d, want %d", row.route, row.method, row.path, got.status, want)
	}
}

// ruleNoVariantReachesIt: the path in upper case, with a trailing slash,
// with its last slash percent-encoded, or with a NUL appended reaches no
// route as this one: each is answered with a 4xx, with the credentials
// the row's own request carries. A case-insensitive proxy in front of the
// registry, or a router that decodes before matching, would serve them.
func ruleNoVariantReachesIt(r reporter, rt *routeTarget, row routeRow) {
	r.Helper()
	last := strings.LastIndex(row.path, "/")
	variants := []string{
		strings.ToUpper(row.path),
		row.path + "/",
		row.path + "%00",
	}
	if last > 0 {
		variants = append(variants, row.path[:last]+"%2F"+row.path[last+1:])
	}
	for _, v := range variants {
		got, ok := rt.call(r, row, routeCall{path: v})
		if ok && (got.status < 400 || got.status >= 500) {
			r.Errorf("%s: %s %s reached a route: status %d, want a 4xx", row.route, row.method, v, got.status)
		}
	}
}

// ruleMethodNotAllowed: a method the route does not have is a 405 whose
// Allow header names the one it has.
func ruleMethodNotAllowed(r reporter, rt *routeTarget, row routeRow) {
	r.Helper()
	for _, m := range []string{http.MethodDelete, http.MethodPut, http.MethodOptions} {
		got, ok := rt.call(r, row, routeCall{method: m})
		if !ok {
			continue
		}
		allow := strings.Split(got.header.Get("Allow"), ", ")
		if got.status != http.StatusMethodNotAllowed || !slices.Contains(allow, row.method) {
			r.Errorf("%s: %s %s: status %d, Allow %q; want 405 naming %s", row.route, m, row.path, got.status, got.header.Get("Allow"), row.method)
		}
	}
}

// ruleHead: a HEAD of a GET route has its GET's status and Content-Type,
// and no body.
func ruleHead(r reporter, rt *routeTarget, row routeRow) {
	r.Helper()
	get, ok1 := rt.call(r, row, routeCall{})
	head, ok2 := rt.call(r, row, routeCall{method: http.MethodHead})
	if !ok1 || !ok2 {
		return
	}
	if head.status != get.status || head.header.Get("Content-Type") != get.header.Get("Content-Type") || len(head.body) != 0 {
		r.Errorf("%s: HEAD %s: status %d, Content-Type %q, %d body bytes; its GET: status %d, Content-Type %q",
			row.route, row.path, head.status, head.header.Get("Content-Type"), len(head.body), get.status, get.header.Get("Content-Type"))
	}
}

// ruleHostIgnored: the answer does not depend on the Host header (the
// registry serves one origin; links it writes come from its configured
// public URL, not from the request).
func ruleHostIgnored(r reporter, rt *routeTarget, row routeRow) {
	r.Helper()
	for _, host := range []string{"evil.example", "EVIL.example:443", "127.0.0.1:1"} {
		got, ok := rt.call(r, row, routeCall{host: host})
		if ok && got.status != row.status {
			r.Errorf("%s: %s %s with Host %q: status %d, want %d", row.route, row.method, row.path, host, got.status, row.status)
		}
		if ok && bytes.Contains(bytes.ToLower(got.body), []byte("evil.example")) {
			r.Errorf("%s: %s %s with Host %q: the answer names that host", row.route, row.method, row.path, host)
		}
	}
}

// ruleUnreadBody: a request to a route that reads no body, declaring one
// it never sends (a stalled client, or one holding connections on
// purpose), is answered without waiting for it, and its connection is then
// closed rather than held for the rest of the body.
func ruleUnreadBody(r reporter, rt *routeTarget, row routeRow) {
	r.Helper()
	head := row.method + " " + row.path + " HTTP/1.1\r\nHost: registry.test\r\n"
	switch row.auth {
	case "key":
		head += "Authorization: Bearer " + rt.key + "\r\n"
	case "token":
		head += "Authorization: Bearer " + testPublishToken + "\r\n"
	}
	base := rt.base(row)
	// A ceiling for a handler that waits for the body: the controls reach
	// it on purpose, a passing run never comes near it.
	ceiling := testkit.Bound
	if _, control := r.(*collector); control {
		ceiling = 2 * time.Second
	}
	// Both framings at once: the server closes each connection only after
	// answer.UnreadBodyGrace.
	var wg sync.WaitGroup
	for _, framing := range []string{"Content-Length: 100\r\n", "Transfer-Encoding: chunked\r\n"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				r.Errorf("%s: dial: %v", row.route, err)
				return
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(ceiling))
			br := bufio.NewReader(conn)
			if _, err := io.WriteString(conn, head+framing+"\r\n"); err != nil {
				r.Errorf("%s: write: %v", row.route, err)
				return
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				r.Errorf("%s: %s declaring a body (%s) it never sends: no answer: %v", row.route, row.path, strings.TrimSpace(framing), err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != row.status {
				r.Errorf("%s: %s declaring a body it never sends: status %d, want %d", row.route, row.path, resp.StatusCode, row.status)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				r.Errorf("%s: %s declaring a body it never sends: the connection was not closed after the answer (%v)", row.route, row.path, err)
			}
		}()
	}
	wg.Wait()
}

// ruleCounted: the registry's request counter has the row's answers under
// the row's label: one more after a request with its credentials, under
// its status.
func ruleCounted(r reporter, rt *routeTarget, row routeRow) {
	r.Helper()
	series := fmt.Sprintf(`meshrx_registry_requests_total{route=%q,status="%d"}`, row.route, row.status)
	count := func() int {
		// A scrape is a request to the metrics route, counted once it
		// has answered (after it read the counter).
		got, ok := rt.call(r, routeRow{route: routeMetrics, method: http.MethodGet, path: MetricsPath, metrics: true}, routeCall{})
		if !ok {
			return -1
		}
		for _, line := range strings.Split(string(got.body), "\n") {
			if rest, found := strings.CutPrefix(line, series+" "); found {
				n, err := strconv.Atoi(strings.TrimSpace(rest))
				if err != nil {
					return -1
				}
				return n
			}
		}
		return 0
	}
	before := count()
	rt.call(r, row, routeCall{})
	after := count()
	want := before + 1
	if row.route == routeMetrics {
		want++ // the scrape that read "before" is counted too
	}
	if before < 0 || after != want {
		r.Errorf("%s: %s counted %d, then %d after one request; want %d", row.route, series, before, after, want)
	}
}

// ruleAnswersWhileEverythingStalls: on a registry whose mesh and volume
// stop answering (every read and write waits until its caller gives up),
// a route that reads nothing answers as usual, and every other route
// answers once its budget has passed on the server's clock: its own answer
// if it had what it needed, else a 503 with Retry-After naming what it was
// waiting on. A fresh registry, so no cache of an earlier rule answers
// for the stalled reads.
func ruleAnswersWhileEverythingStalls(r reporter, rt *routeTarget, row routeRow) {
	r.Helper()
	t := rt.f.t.(*testing.T)
	fresh := newRouteTarget(t, rt.wrap)
	fresh.stall.Store(true)
	clk := fresh.f.clk
	pending := clk.Pending()
	replies := make(chan routeReply, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		got, _ := fresh.call(r, row, routeCall{ctx: ctx})
		replies <- got
	}()
	bound := testkit.Bound
	if _, control := r.(*collector); control {
		bound = time.Second
	}
	var got routeReply
	answered := false
	if row.budget > 0 {
		// The route's deadline is armed when the request arrives; a route
		// that answered at once (from what it holds) may have disarmed it
		// before it was seen.
		if err := clk.BlockUntil(pending+1, bound); err != nil {
			select {
			case got = <-replies:
				answered = true
			default:
				r.Errorf("%s: %s %s with everything stalled: its deadline was never armed: %v", row.route, row.method, row.path, err)
				cancel()
				<-replies
				return
			}
		} else {
			clk.Advance(row.budget)
		}
	}
	if !answered {
		select {
		case got = <-replies:
		case <-time.After(bound):
			r.Errorf("%s: %s %s with everything stalled: no answer %s past its budget (%s)", row.route, row.method, row.path, bound, row.budget)
			cancel()
			<-replies
			return
		}
	}
	if got.status == row.status {
		return
	}
	// What a 503 names: the stage the Deadline's refusal was waiting on,
	// or the readiness checks that did not pass (a health route's own
	// answer, when its probes' budgets ran out before the route's).
	var body struct {
		refusal
		NotReady []checkResult `json:"notReady"`
	}
	_ = json.Unmarshal(got.body, &body)
	named := len(body.WaitingOn) > 0 || body.Stage != "" || len(body.NotReady) > 0 && body.NotReady[0].Check != ""
	if row.budget == 0 || got.status != http.StatusServiceUnavailable || got.header.Get("Retry-After") == "" || !named {
		r.Errorf("%s: %s %s with everything stalled: status %d, Retry-After %q, %s; want %d, or a 503 with Retry-After naming what it waited on",
			row.route, row.method, row.path, got.status, got.header.Get("Retry-After"), got.body, row.status)
	}
}

// stallingStore is the mesh; once stall is true every read never answers
// and every write waits for its ctx, as a database that accepts
// connections and then stops answering does.
type stallingStore struct {
	mesh.Store
	stall *atomic.Bool
}

func (s stallingStore) Query(q string) rx.Observable[mesh.Change] {
	return rx.Defer(func() rx.Observable[mesh.Change] {
		if s.stall.Load() {
			return rx.Never[mesh.Change]()
		}
		return s.Store.Query(q)
	})
}

func (s stallingStore) Get(path string) rx.Observable[mesh.Node] {
	return rx.Defer(func() rx.Observable[mesh.Node] {
		if s.stall.Load() {
			return rx.Never[mesh.Node]()
		}
		return s.Store.Get(path)
	})
}

func (s stallingStore) wait(ctx context.Context) error {
	if !s.stall.Load() {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s stallingStore) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	if err := s.wait(ctx); err != nil {
		return mesh.Node{}, err
	}
	return s.Store.Put(ctx, n)
}

func (s stallingStore) PutIfVersion(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	if err := s.wait(ctx); err != nil {
		return mesh.Node{}, err
	}
	return s.Store.PutIfVersion(ctx, n, expected)
}

func (s stallingStore) Delete(ctx context.Context, path string) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Store.Delete(ctx, path)
}

// stallingVolume is the volume; once stall is true every operation waits
// for its ctx.
type stallingVolume struct {
	landing.Volume
	stall *atomic.Bool
}

func (v stallingVolume) wait(ctx context.Context) error {
	if !v.stall.Load() {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (v stallingVolume) MkdirAll(ctx context.Context, name string) error {
	if err := v.wait(ctx); err != nil {
		return err
	}
	return v.Volume.MkdirAll(ctx, name)
}

func (v stallingVolume) WriteFile(ctx context.Context, name string, data []byte) error {
	if err := v.wait(ctx); err != nil {
		return err
	}
	return v.Volume.WriteFile(ctx, name, data)
}

func (v stallingVolume) Rename(ctx context.Context, oldname, newname string) error {
	if err := v.wait(ctx); err != nil {
		return err
	}
	return v.Volume.Rename(ctx, oldname, newname)
}

func (v stallingVolume) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if err := v.wait(ctx); err != nil {
		return nil, err
	}
	return v.Volume.ReadDir(ctx, name)
}

func (v stallingVolume) ReadFile(ctx context.Context, name string, limit int64) ([]byte, error) {
	if err := v.wait(ctx); err != nil {
		return nil, err
	}
	return v.Volume.ReadFile(ctx, name, limit)
}

func (v stallingVolume) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := v.wait(ctx); err != nil {
		return nil, err
	}
	return v.Volume.Stat(ctx, name)
}

func (v stallingVolume) RemoveAll(ctx context.Context, name string) error {
	if err := v.wait(ctx); err != nil {
		return err
	}
	return v.Volume.RemoveAll(ctx, name)
}

func (v stallingVolume) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := v.wait(ctx); err != nil {
		return nil, err
	}
	return v.Volume.Open(ctx, name)
}

func TestEveryRouteKeepsTheRouteRulesAgainstAnAttackersRequests(t *testing.T) {
	rt := newRouteTarget(t, nil)
	for _, rule := range routeRules() {
		t.Run(rule.name, func(t *testing.T) {
			for _, row := range routeTable() {
				if !rule.applies(row) {
					continue
				}
				t.Run(row.route, func(t *testing.T) {
					if rule.parallel {
						t.Parallel()
					}
					rule.check(t, rt, row)
				})
			}
		})
	}
}

// TestTheRouteRulesCatchBrokenHandlers runs each rule over the registry
// behind a wrapper that breaks it the way a proxy or a careless change
// would: each rule must fail there, on some route (their negative
// controls).
func TestTheRouteRulesCatchBrokenHandlers(t *testing.T) {
	broken := map[string]func(key string) func(http.Handler) http.Handler{
		"it answers its credentials and refuses their absence": func(key string) func(http.Handler) http.Handler {
			// A proxy that signs requests that came without a key.
			return func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Header.Get("Authorization") == "" {
						r.Header.Set("Authorization", "Bearer "+key)
					}
					next.ServeHTTP(w, r)
				})
			}
		},
		"no variant of its path reaches it": func(string) func(http.Handler) http.Handler {
			// Case-insensitive routing.
			return func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					r.URL.Path = strings.ToLower(r.URL.Path)
					r.URL.RawPath = ""
					next.ServeHTTP(w, r)
				})
			}
		},
		"a method it has not is a 405 naming the ones it has": func(string) func(http.Handler) http.Handler {
			return func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodDelete {
						http.NotFound(w, r)
						return
					}
					next.ServeHTTP(w, r)
				})
			}
		},
		"a HEAD answers as its GET without a body": func(string) func(http.Handler) http.Handler {
			return func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodHead {
						w.WriteHeader(http.StatusNoContent)
						return
					}
					next.ServeHTTP(w, r)
				})
			}
		},
		"a Host header naming another host changes nothing": func(string) func(http.Handler) http.Handler {
			// Routing by virtual host.
			return func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if !strings.HasPrefix(r.Host, "127.0.0.1:") || r.Host == "127.0.0.1:1" {
						http.Error(w, "misdirected", http.StatusMisdirectedRequest)
						return
					}
					next.ServeHTTP(w, r)
				})
			}
		},
		"a body it does not read is not waited for": func(string) func(http.Handler) http.Handler {
			// A middleware that buffers every body before routing.
			return func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					data, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(data))
					next.ServeHTTP(w, r)
				})
			}
		},
		"its answers are counted under its label": func(string) func(http.Handler) http.Handler {
			// A cache in front of the registry that answers /api/version
			// itself.
			return func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == VersionPath && r.Method == http.MethodGet {
						w.Header().Set("Content-Type", "application/json")
						_, _ = io.WriteString(w, `{"version":"cached"}`)
						return
					}
					next.ServeHTTP(w, r)
				})
			}
		},
	}
	broken["with everything it reads stalled it answers by its budget"] = func(string) func(http.Handler) http.Handler {
		// A middleware that reads the mesh before routing, with no
		// budget of its own: the route's deadline is never armed.
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == client.IndexPath {
					<-r.Context().Done()
					return
				}
				next.ServeHTTP(w, r)
			})
		}
	}
	for _, rule := range routeRules() {
		t.Run(rule.name, func(t *testing.T) {
			mk, ok := broken[rule.name]
			require.True(t, ok, "rule %q has no broken handler among the controls", rule.name)
			// The key is issued inside the target: wrap through a
			// pointer set once it is known.
			var key string
			rt := newRouteTarget(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mk(key)(h).ServeHTTP(w, r) })
			})
			key = rt.key
			c := &collector{}
			for _, row := range routeTable() {
				if rule.applies(row) && len(c.failed) == 0 {
					rule.check(c, rt, row)
				}
			}
			require.NotEmpty(t, c.failed, "the rule passed a handler broken against it")
			t.Logf("caught: %s", c.failed[0])
		})
	}
}

// TestEveryRouteTheServerRegistersIsInTheRouteTable reads Server.routes:
// every route it hands to its handle func must have a row, and every row
// must name a route it registers. Negative control (run): with the
// readyz row removed, this test failed naming routeReady.
func TestEveryRouteTheServerRegistersIsInTheRouteTable(t *testing.T) {
	consts := map[string]string{} // constant name → value
	var registered []string
	for _, file := range testkit.PackageFiles(t, ".") {
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								consts[name.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Name.Name != "routes" || d.Recv == nil {
					continue
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					if fn, ok := call.Fun.(*ast.Ident); ok && fn.Name == "handle" && len(call.Args) > 0 {
						if id, ok := call.Args[0].(*ast.Ident); ok {
							registered = append(registered, id.Name)
						} else {
							t.Errorf("routes: a route registered under a label that is not a constant: %T", call.Args[0])
						}
					}
					return true
				})
			}
		}
	}
	require.NotEmpty(t, registered, "found no handle(...) call in Server.routes")
	rows := map[string]bool{}
	for _, row := range routeTable() {
		rows[row.route] = true
	}
	seen := map[string]bool{}
	for _, name := range registered {
		label, ok := consts[name]
		if !ok {
			t.Errorf("routes registers %s, which is not a string constant of the package", name)
			continue
		}
		seen[label] = true
		if !rows[label] {
			t.Errorf("routes registers %s (%q), which has no row in routeTable", name, label)
		}
	}
	for label := range rows {
		if !seen[label] {
			t.Errorf("routeTable has a row for %q, which routes does not register", label)
		}
	}
}
