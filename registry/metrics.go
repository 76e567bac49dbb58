package registry

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/rx"
)

// serverMetrics are a Server's collectors, registered on the caller's
// registerer (never the global one).
type serverMetrics struct {
	reg      prometheus.Registerer
	gatherer prometheus.Gatherer // what GET /metrics serves; nil leaves it unmapped

	requests    *prometheus.CounterVec
	stages      *prometheus.HistogramVec
	unavailable *prometheus.CounterVec
	collectors  []prometheus.Collector
}

func newServerMetrics(s *Server, reg prometheus.Registerer) (*serverMetrics, error) {
	m := &serverMetrics{reg: reg}
	if reg == nil {
		own := prometheus.NewRegistry()
		m.reg, m.gatherer = own, own
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		m.gatherer = g
	}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meshrx_registry_requests_total",
		Help: "Registry requests answered, by route and status.",
	}, []string{"route", "status"})
	m.stages = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "meshrx_registry_stage_duration_seconds",
		Help:    "How long registry requests waited in each stage that finished, by route and stage.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 25, 60},
	}, []string{"route", "stage"})
	m.unavailable = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meshrx_registry_unavailable_total",
		Help: "Registry requests answered 503, by route and the stage they were waiting on.",
	}, []string{"route", "stage"})
	derivations := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "meshrx_registry_activation_derivations_total",
		Help: "Derivations (scans of the module records) the served activation has started.",
	}, func() float64 { return float64(s.served.Derivations()) })
	took := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "meshrx_registry_activation_derivation_seconds",
		Help: "How long the last published derivation of the served activation took; a re-derivation starts this much (and a quarter) before the snapshot is due.",
	}, func() float64 { return s.served.LastDerivation().Seconds() })
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "meshrx_registry_snapshot_age_seconds",
		Help: "Seconds since the served activation snapshot's derivation started; NaN while there is none.",
	}, func() float64 {
		snap, ok := s.served.Snapshot()
		if !ok {
			return math.NaN()
		}
		return s.clk.Since(snap.DerivedAt).Seconds()
	})
	catalogUp := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "meshrx_registry_catalog_available",
		Help: "1 while the package catalog's live query is running, 0 while the last known state is served.",
	}, func() float64 {
		if s.catalog.health().available {
			return 1
		}
		return 0
	})
	catalogDown := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "meshrx_registry_catalog_unavailable_seconds",
		Help: "Seconds the package catalog has been unavailable; 0 while it is live.",
	}, func() float64 {
		h := s.catalog.health()
		if h.available || h.since.IsZero() {
			return 0
		}
		return s.clk.Since(h.since).Seconds()
	})
	announceFailed := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "meshrx_registry_announce_failures_total",
		Help: "Announcements of a write on the change feed that failed (first attempts and retries); the write is retried and other replicas read it from the volume's journal.",
	}, func() float64 { return float64(s.served.AnnounceFailures()) })
	unannounced := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "meshrx_registry_unannounced_writes",
		Help: "Writes made here whose announcement on the change feed failed and is being retried (/readyz is not ready meanwhile).",
	}, func() float64 { return float64(s.served.Unannounced()) })
	covered := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "meshrx_registry_uncovered_seconds",
		Help: "Seconds since the moment up to which this replica is known to serve every record committed on the volume (its snapshot's derivation or its last journal tail); /readyz fails past Freshness. NaN while there is no snapshot.",
	}, func() float64 {
		snap, ok := s.served.Snapshot()
		if !ok {
			return math.NaN()
		}
		age, _ := s.served.uncovered(snap)
		return age.Seconds()
	})
	assemblies := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "meshrx_registry_index_assemblies_total",
		Help: "Index documents assembled; requests beyond these were served a kept document.",
	}, func() float64 { return float64(s.index.assemblies.Load()) })

	all := []prometheus.Collector{m.requests, m.stages, m.unavailable, derivations, took, age, catalogUp, catalogDown, assemblies, announceFailed, unannounced, covered, s.readiness.gauge}
	for _, c := range all {
		if err := m.reg.Register(c); err != nil {
			m.unregister()
			return nil, errors.Join(errors.New("registry: registering the server's metrics"), err)
		}
		m.collectors = append(m.collectors, c)
	}
	return m, nil
}

// unregister removes every collector this server registered.
func (m *serverMetrics) unregister() {
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
	m.collectors = nil
}

// metricsRoute answers GET /metrics from the server's gatherer.
func (s *Server) metricsRoute(r *http.Request) rx.Observable[answer.Answer] {
	h := promhttp.HandlerFor(s.metrics.gatherer, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return background(func(ctx context.Context) (answer.Answer, error) {
		return recordAnswer(func(w http.ResponseWriter) { h.ServeHTTP(w, r.WithContext(ctx)) }), nil
	})
}

// noteRefusal records in r's ledger that r is refused because of stage:
// what a route tells the metrics about its request beyond the status, when
// no stage is pending. The ledger carries it, so that the request needs no
// second context (and copy of itself) for it.
func noteRefusal(r *http.Request, stage string) {
	answer.LedgerFrom(r.Context()).Note(stage)
}

// instrument counts each request by route and status, observes how long
// each of its finished stages took, and counts a 503 by the stage it was
// waiting on.
func (s *Server) instrument(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ledger := answer.LedgerFrom(r.Context())
		if ledger == nil {
			ledger = answer.NewLedger(s.clk)
			r = r.WithContext(answer.WithLedger(r.Context(), ledger))
		}
		sw := &statusWriter{ResponseWriter: w, ledger: ledger}
		next.ServeHTTP(sw, r)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
		var done [4]answer.StageTime // a route enters three or four stages
		for _, st := range ledger.AppendFinished(done[:0]) {
			s.metrics.stages.WithLabelValues(route, st.Name).Observe(st.Took.Seconds())
		}
		if status == http.StatusServiceUnavailable {
			stage := sw.refusedIn
			if stage == "" {
				stage = answer.NoStageRunning
			}
			s.metrics.unavailable.WithLabelValues(route, stage).Inc()
		}
	})
}

// statusWriter remembers the status written and, for a refusal, the stage
// it was about: the stages pending when it was written, else the route's
// note.
type statusWriter struct {
	http.ResponseWriter
	ledger    *answer.Ledger
	status    int
	refusedIn string
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
		if status == http.StatusServiceUnavailable {
			w.refusedIn = runningStageOrNote(w.ledger)
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func runningStageOrNote(l *answer.Ledger) string {
	if pending := l.Pending(); len(pending) > 0 {
		return answer.RunningStage(pending)
	}
	return l.Noted()
}
