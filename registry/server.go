package registry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// The stages a registry request may wait in, as the ledger, the refusals
// and the metrics name them.
const (
	StageAuthentication = "instance-key authentication"
	StageActivation     = "activation list"
	StageCatalog        = "package catalog"
	StageBundleRead     = "bundle read"
	StageUpload         = "publish upload"
	StageLanding        = "bundle landing"
	StagePackageNode    = "package node"
)

// Answer budgets, counted from a request's arrival. Each sits between the
// slowest healthy answer and the consumer's own attempt timeout, so that the
// registry refuses, naming what it waited on, before the consumer gives up
// on a connection with nothing written.
const (
	IndexBudget    = 25 * time.Second // index and catalog
	DownloadBudget = 60 * time.Second // bundle download
)

// couldNotFindOut names the registry's own errors that mean it could not
// find out, beside those answer.CouldNotFindOut knows: a closed landing, a
// closed catalog, a volume that could not be reached (an object store down). They are answered 503 with Retry-After.
func couldNotFindOut(err error) bool {
	return answer.CouldNotFindOut(err) || errors.Is(err, landing.ErrClosed) || errors.Is(err, errCatalogClosed) ||
		landing.IsUnavailable(err)
}

// ConfigError reports a ServerOptions field that cannot be used.
type ConfigError struct {
	Setting string // e.g. "ServerOptions.PublicURL"
	Value   string // the value refused
	Problem string // e.g. "is required"
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("registry: %s %s", e.Setting, e.Problem)
	}
	return fmt.Sprintf("registry: %s %s: %q", e.Setting, e.Problem, e.Value)
}

// Paths of the routes that are not bundle routes.
const (
	VersionPath = "/api/version"
	HealthPath  = "/healthz"
	MetricsPath = "/metrics"
)

// DefaultSource is the grant source, and the mesh namespace of the package
// nodes, when ServerOptions.Source is empty.
const DefaultSource = "Plugins"

// healthBudget bounds a health answer: its checks are each bounded by
// ReadinessProbeBudget, well within it.
const healthBudget = 5 * time.Second

// Authenticator decides who a request's Authorization header belongs to
// (see auth.Authenticator). A missing or malformed key must be answered
// synchronously, without reading storage: that is the fast 401.
type Authenticator interface {
	Authenticate(header string) rx.Observable[auth.Result]
}

// ServerOptions configures a Server.
type ServerOptions struct {
	// Served is the activation snapshot the index is assembled from, and
	// what publishing lands through; bundle downloads are answered
	// authoritatively by the ModuleLanding it serves. Required.
	Served *ServedActivation
	// Auth authenticates every bundle request. Required.
	Auth Authenticator
	// Mesh holds the package nodes (Source/{plugin}, node type Package):
	// the server keeps one live query over them. Required.
	Mesh mesh.Store
	// Source is the grant source the packages belong to, and the namespace
	// of their nodes. Default "Plugins".
	Source string
	// PublishToken authorises publishing as a bearer token; "" leaves the
	// publish route unmapped.
	PublishToken string
	// Clock times budgets, stages and the snapshot's age; nil is the real clock.
	Clock clock.Clock
	// Logger receives refusals and catalog problems; nil is slog.Default().
	Logger *slog.Logger
	// Metrics is where the server registers its collectors (they are
	// unregistered by Close). Nil gives the server a registry of its own.
	// MetricsHandler serves it when it is also a prometheus.Gatherer.
	Metrics prometheus.Registerer
	// IndexBudget bounds the index and the health check's answer, from
	// arrival. Default IndexBudget (25s).
	IndexBudget time.Duration
	// DownloadBudget bounds a bundle download's answer (its status line),
	// from arrival. Default DownloadBudget (60s).
	DownloadBudget time.Duration
	// PublishBudget bounds a publication, from arrival: its upload and its
	// work up to the landing's commit point (else 503, nothing published).
	// A landing committing when it runs out is finished and answered, up to
	// landing.CommitBudget later. Default DownloadBudget (60s).
	PublishBudget time.Duration
	// MaxPublishBytes refuses larger uploads with 413. Default DefaultMaxArchive.
	MaxPublishBytes int64
	// UploadSlots bounds the publications uploading at once; one beyond is
	// refused with 503 and Retry-After. Default DefaultUploadSlots.
	UploadSlots int
	// SpoolDir is where uploads are streamed to before they land. Default
	// os.TempDir().
	SpoolDir string
	// Version is what GET /api/version reports.
	Version string
	// PublicURL is the absolute http(s) URL the registry is reached at,
	// e.g. "https://registry.example.com": bundle URLs in the index start
	// with it. "" serves them relative to the registry ("/api/plugins/…").
	// The request's Host header is never used: it is the caller's to set.
	PublicURL string
	// IndexCacheSize bounds the assembled index documents kept. Default
	// DefaultIndexCacheSize.
	IndexCacheSize int
	// Feed reports the state of Mesh's change feed, when the store has one
	// that can drop (pgstore: its Feed, mapped to FeedState.Err when not
	// Connected): nil while it is connected, why while it is down. While it
	// is down the package catalog is incomplete (see Complete), and a
	// package it has not heard of is withheld. Nil: the feed does not drop.
	Feed rx.Observable[error]
	// CatalogRetry is the wait before the package catalog's live query is
	// restarted after it failed. Default DefaultCatalogRetry.
	CatalogRetry time.Duration
}

// Server is the plugin registry's HTTP API: the bundle index, bundle
// downloads, publishing, version, health and metrics.
//
// The index is assembled once per publication or entitlement change, not
// per request: a document is kept per (activation content, catalog version,
// caller entitlement). Beyond authenticating its caller (the key, instance
// and grant point reads of the Authenticator), a request reads the served
// snapshot and the catalog's in-memory state: never a scan, never a mesh
// query. Every route starts its ledger at arrival and answers or refuses
// within its budget, naming the stage it was waiting on.
type Server struct {
	landing *landing.ModuleLanding
	served  *ServedActivation
	auth    Authenticator
	mesh    mesh.Store
	source  string
	token   string
	clk     clock.Clock
	log     *slog.Logger
	version string
	baseURL string // PublicURL without a trailing slash; "" for relative URLs

	indexBudget, downloadBudget, publishBudget time.Duration
	maxPublish                                 int64
	uploads                                    chan struct{} // upload slots
	spoolDir                                   string

	catalog   *catalog
	readiness *readinessState
	life      context.Context // ends at Close: the server's own work (readiness) stops
	stop      context.CancelFunc
	index     *indexCache
	contents  contentGenerations
	keys      keyScratches
	metrics   *serverMetrics
	handler   http.Handler

	metricsHandler http.Handler
}

// NewServer checks opts, registers the metrics and starts the package
// catalog's live query. Close stops it.
func NewServer(opts ServerOptions) (*Server, error) {
	switch {
	case opts.Served == nil:
		return nil, &ConfigError{Setting: "ServerOptions.Served", Problem: "is required"}
	case opts.Auth == nil:
		return nil, &ConfigError{Setting: "ServerOptions.Auth", Problem: "is required"}
	case opts.Mesh == nil:
		return nil, &ConfigError{Setting: "ServerOptions.Mesh", Problem: "is required"}
	}
	// It would panic on every request (auth.Authenticator panics without
	// its Mesh): refused where it is wired.
	if a, ok := opts.Auth.(*auth.Authenticator); ok && (a == nil || a.Mesh == nil) {
		return nil, &ConfigError{Setting: "ServerOptions.Auth", Problem: "is an *auth.Authenticator without a Mesh, which cannot check a key"}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"IndexBudget", opts.IndexBudget}, {"DownloadBudget", opts.DownloadBudget}, {"PublishBudget", opts.PublishBudget}, {"CatalogRetry", opts.CatalogRetry}} {
		if d.v < 0 {
			return nil, &ConfigError{Setting: "ServerOptions." + d.name, Value: d.v.String(), Problem: "is negative (zero takes the default)"}
		}
	}
	if opts.MaxPublishBytes < 0 || opts.IndexCacheSize < 0 || opts.UploadSlots < 0 {
		return nil, &ConfigError{Setting: "ServerOptions.MaxPublishBytes/IndexCacheSize/UploadSlots", Problem: "is negative (zero takes the default)"}
	}
	source := opts.Source
	if source == "" {
		source = DefaultSource
	}
	if err := landing.ValidateModuleName(source); err != nil {
		return nil, &ConfigError{Setting: "ServerOptions.Source", Value: source, Problem: "is not a plain name: " + err.Error()}
	}
	s := &Server{
		landing:        opts.Served.landing,
		served:         opts.Served,
		auth:           opts.Auth,
		mesh:           opts.Mesh,
		source:         source,
		token:          opts.PublishToken,
		clk:            opts.Clock,
		log:            opts.Logger,
		version:        opts.Version,
		indexBudget:    orDuration(opts.IndexBudget, IndexBudget),
		downloadBudget: orDuration(opts.DownloadBudget, DownloadBudget),
		publishBudget:  orDuration(opts.PublishBudget, DownloadBudget),
		maxPublish:     opts.MaxPublishBytes,
		uploads:        make(chan struct{}, cmp.Or(opts.UploadSlots, DefaultUploadSlots)),
		spoolDir:       opts.SpoolDir,
		index:          newIndexCache(opts.IndexCacheSize),
		readiness:      newReadinessState(),
	}
	if s.clk == nil {
		s.clk = clock.New()
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	base, err := publicURL(opts.PublicURL)
	if err != nil {
		return nil, err
	}
	s.baseURL = base
	if s.maxPublish == 0 {
		s.maxPublish = landing.DefaultMaxArchive
	}
	s.life, s.stop = context.WithCancel(context.Background())
	s.catalog = newCatalog(s.mesh, s.source, s.clk, orDuration(opts.CatalogRetry, DefaultCatalogRetry), s.log)
	m, err := newServerMetrics(s, opts.Metrics)
	if err != nil {
		s.stop()
		return nil, err
	}
	s.metrics = m
	s.handler = s.routes()
	s.catalog.start()
	s.catalog.watchFeed(opts.Feed)
	return s, nil
}

func orDuration(v, d time.Duration) time.Duration {
	if v <= 0 {
		return d
	}
	return v
}

// publicURL checks ServerOptions.PublicURL: "" or an absolute http(s) URL
// with a host and nothing after its path.
func publicURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", &ConfigError{Setting: "ServerOptions.PublicURL", Value: raw, Problem: "is not an absolute http(s) URL with a host and no query, fragment or user"}
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Handler returns the server's public routes; /metrics is not among them (see MetricsHandler).
func (s *Server) Handler() http.Handler { return s.handler }

// Close stops the package catalog's live query and unregisters the metrics.
// It does not close Served (or its landing) or Mesh, which the caller owns, and it
// does not wait for requests: shut the http.Server down first.
func (s *Server) Close(context.Context) error {
	s.stop()
	s.catalog.close()
	s.metrics.unregister()
	return nil
}

// Route names, as the metrics label them.
const (
	routeIndex    = "index"
	routeBundle   = "bundle"
	routePublish  = "publish"
	routeVersion  = "version"
	routeHealth   = "healthz"
	routeLive     = "livez"
	routeReady    = "readyz"
	routeMetrics  = "metrics"
	publishPrefix = "POST " + client.BundlesPath + "/{plugin}"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(route, pattern string, budget time.Duration, answers func(*http.Request) rx.Observable[answer.Answer], wrap ...func(http.Handler) http.Handler) {
		var h http.Handler = answer.Deadline{Route: pattern, Budget: budget, Clock: s.clk, Logger: s.log, Unavailable: couldNotFindOut}.Handler(answers)
		for _, w := range wrap {
			h = w(h)
		}
		mux.Handle(pattern, answer.Arrival(s.clk, s.instrument(route, h)))
	}
	handle(routeIndex, "GET "+client.IndexPath, s.indexBudget, s.indexRoute)
	handle(routeBundle, "GET "+client.BundlesPath+"/{plugin}/{version}", s.downloadBudget, s.downloadRoute, withBundleHold)
	if s.token != "" {
		handle(routePublish, publishPrefix, s.publishAnswerBudget(), s.publishRoute, s.publishGate)
	}
	handle(routeVersion, "GET "+VersionPath, s.indexBudget, s.versionRoute)
	handle(routeLive, "GET "+LivePath, healthBudget, s.liveRoute)
	handle(routeReady, "GET "+ReadyPath, healthBudget, s.readyRoute)
	handle(routeHealth, "GET "+HealthPath, healthBudget, s.readyRoute) // kept: answers as /readyz
	// /metrics is not public: it is served by MetricsHandler, on a listener of its own.
	s.metricsHandler = http.NotFoundHandler()
	if s.metrics.gatherer != nil {
		public := mux
		mux = http.NewServeMux()
		handle(routeMetrics, "GET "+MetricsPath, s.indexBudget, s.metricsRoute)
		s.metricsHandler, mux = closeUnreadBodies(mux), public
	}
	return closeUnreadBodies(mux)
}

// closeUnreadBodies answers every request with a body on a connection it
// then closes (answer.CloseUnread): no route reads a body but publishing, whose
// gate takes that back once it reads the upload (readingBody). The mux's
// own answers (404, 405, a redirect to a clean path) read none either.
func closeUnreadBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer.CloseUnread(w, r)
		next.ServeHTTP(w, r)
	})
}

// readingBody undoes answer.CloseUnread for a route that reads the body: the
// connection may be kept, and the route sets its own read deadline.
func readingBody(w http.ResponseWriter) {
	w.Header().Del("Connection")
}

// MetricsHandler serves GET /metrics (when the server's Metrics is also a
// prometheus.Gatherer). It is not part of Handler: per-route stage timings
// help tell apart answers that are otherwise identical, so they belong on a
// listener that is not public (examples/registry: -metrics-addr, loopback by
// default).
func (s *Server) MetricsHandler() http.Handler { return s.metricsHandler }

// nowAuthenticator is an Authenticator that can often answer on the
// request's goroutine (auth.Authenticator: a missing key, or a kept
// decision, see auth.DecisionTypes). When legs is nil, res is the answer;
// otherwise legs is the stream that decides (it does not read again what
// AuthenticateNow read).
type nowAuthenticator interface {
	AuthenticateNow(ctx context.Context, header string, within time.Duration) (res auth.Result, legs rx.Observable[auth.Result])
}

// authenticated runs next for an authenticated caller and answers the
// others: 401 for no usable key, 503 with Retry-After for "could not find
// out". The missing-key answer is synchronous: it reads nothing. An
// authenticator that answers at once is not read as a stream: its stage is
// entered before it is asked and finished when it answered, and next runs
// in the same call (a poll's answer is then built a few frames deep, not
// inside the callbacks of the authentication's legs). Its wait is bounded
// by what is left of the route's budget, counted from the request's
// arrival (the Deadline counts the time this call takes, too).
func (s *Server) authenticated(r *http.Request, budget time.Duration, next func(auth.Result) rx.Observable[answer.Answer]) rx.Observable[answer.Answer] {
	header := r.Header.Get("Authorization")
	l := answer.LedgerFrom(r.Context())
	var src rx.Observable[auth.Result]
	if now, ok := s.auth.(nowAuthenticator); ok {
		within := budget
		var stage *answer.Stage
		if l != nil {
			within -= l.Elapsed()
			stage = l.Enter(StageAuthentication)
		}
		res, legs := now.AuthenticateNow(r.Context(), header, within)
		if legs == nil {
			if stage != nil {
				stage.Finish()
			}
			return afterAuthentication(r, res, next)
		}
		src = answer.Continue(legs, stage)
	} else {
		// Authenticate is cold, and a route's answer is subscribed as soon
		// as it is built (see answer.Deadline): no Defer is needed to read
		// nothing before the subscription.
		src = s.auth.Authenticate(header)
		if src == nil {
			return rx.Throw[answer.Answer](errors.New("registry: the authenticator returned no result stream"))
		}
		src = answer.InStage(src, l, StageAuthentication)
	}
	return rx.SelectMany(rx.Take(src, 1), func(res auth.Result) rx.Observable[answer.Answer] {
		return afterAuthentication(r, res, next)
	})
}

// afterAuthentication answers a caller the authenticator did not resolve,
// and runs next for one it did.
func afterAuthentication(r *http.Request, res auth.Result, next func(auth.Result) rx.Observable[answer.Answer]) rx.Observable[answer.Answer] {
	switch {
	case res.Unavailable != "":
		noteRefusal(r, StageAuthentication)
		// The authenticator has logged the detail; the answer names
		// the leg only (the text before its first ": ").
		leg, _, _ := strings.Cut(res.Unavailable, ": ")
		return rx.Return(recordAnswer(func(w http.ResponseWriter) {
			auth.WriteUnavailable(w, StageAuthentication+": "+leg+": "+answer.ReasonUnavailable, 0)
		}))
	case !res.Authenticated():
		return rx.Return(recordAnswer(auth.WriteUnauthenticated))
	}
	return next(res)
}

// versionRoute answers what this server is.
func (s *Server) versionRoute(*http.Request) rx.Observable[answer.Answer] {
	return rx.Return(jsonAnswer(http.StatusOK, struct {
		Version string `json:"version"`
	}{s.version}))
}

// answerWriter is an http.ResponseWriter that keeps what is written, so a
// helper that writes a response (auth.WriteUnauthenticated, promhttp) can
// produce an Answer instead.
type answerWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *answerWriter) Header() http.Header { return a.header }

func (a *answerWriter) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *answerWriter) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.body.Write(p)
}

// recordAnswer returns what write writes, as an Answer.
func recordAnswer(write func(http.ResponseWriter)) answer.Answer {
	a := &answerWriter{header: http.Header{}}
	write(a)
	return answer.Answer{Status: a.status, Header: a.header, Body: a.body.Bytes()}
}

// jsonAnswer is a JSON answer that no cache keeps.
func jsonAnswer(status int, v any) answer.Answer {
	body, err := json.Marshal(v)
	if err != nil {
		body, _ = json.Marshal(struct {
			Error string `json:"error"`
		}{"registry: encoding the answer failed: " + err.Error()})
		status = http.StatusInternalServerError
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	return answer.Answer{Status: status, Header: h, Body: append(body, '\n')}
}

// errorAnswer is a JSON error answer: {"error": msg}.
func errorAnswer(status int, msg string) answer.Answer {
	return jsonAnswer(status, struct {
		Error string `json:"error"`
	}{msg})
}
