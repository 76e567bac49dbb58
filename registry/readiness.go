package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// Paths of the health routes. HealthPath answers as ReadyPath does.
const (
	LivePath  = "/livez"
	ReadyPath = "/readyz"
)

// Readiness bounds.
const (
	// ReadinessProbeBudget bounds each readiness check: a check that has
	// not answered within it is "not ready", named.
	ReadinessProbeBudget = 2 * time.Second
)

// Names of the readiness checks, as /readyz and the readiness gauge name them.
const (
	CheckStore         = "store"
	CheckSnapshot      = "activation snapshot"
	CheckCatalog       = "package catalog"
	CheckAnnouncements = "change announcements"
)

// readinessCheck is one named check /readyz runs. check emits nil when the
// check passes, or a notReady saying why it does not; an error, or no
// answer within ReadinessProbeBudget, is "not ready" too. Adding a check is
// adding one entry to Server.readinessChecks.
type readinessCheck struct {
	name  string
	check func() rx.Observable[*notReady]
}

// notReady is why a check failed: a stable reason for the answer and a
// detail for the log only.
type notReady struct {
	reason string
	detail string
}

// checkResult is one check's outcome in a readiness answer.
type checkResult struct {
	Check  string `json:"check"`
	Reason string `json:"reason"`

	detail string
}

// readiness is what /readyz answers.
type readiness struct {
	Status   string        `json:"status"` // "ready" or "not ready"
	NotReady []checkResult `json:"notReady"`
}

// readinessChecks is the list /readyz runs, in the order it reports them.
func (s *Server) readinessChecks() []readinessCheck {
	return []readinessCheck{
		{name: CheckStore, check: s.storeCheck},
		{name: CheckSnapshot, check: s.snapshotCheck},
		{name: CheckCatalog, check: s.catalogCheck},
		{name: CheckAnnouncements, check: s.announcementsCheck},
	}
}

// announcementsCheck fails while writes made here wait for their
// announcement on the change feed to be retried: other replicas serve them
// only through the journal's tail (within Freshness) meanwhile.
func (s *Server) announcementsCheck() rx.Observable[*notReady] {
	names, n := s.served.unannouncedModules()
	if n == 0 {
		return rx.Return[*notReady](nil)
	}
	return rx.Return(&notReady{
		reason: fmt.Sprintf("%d writes made here are not announced on the change feed yet (retried every %s; other replicas serve them through the volume's journal meanwhile)", n, s.served.maintPeriod),
		detail: fmt.Sprintf("modules %s; %d failed announcements so far", strings.Join(names, ", "), s.served.AnnounceFailures()),
	})
}

// storeCheck reads one package node: the store answers (present or
// absent), or it could not find out.
func (s *Server) storeCheck() rx.Observable[*notReady] {
	read := rx.Take(s.mesh.Get(s.source+"/"+readinessProbeNode), 1)
	answered := rx.Concat(rx.Map(read, func(mesh.Node) *notReady { return nil }), rx.Return[*notReady](nil))
	return rx.Catch(rx.Take(answered, 1), func(err error) rx.Observable[*notReady] {
		return rx.Return(&notReady{reason: "the store did not answer its probe read", detail: err.Error()})
	})
}

// readinessProbeNode is the node the store check reads; it need not exist.
const readinessProbeNode = "readiness-probe"

// snapshotCheck reads the served snapshot (starting a re-derivation when it
// is due, as any read does) and fails while this replica may be missing a
// record committed on the volume longer ago than Freshness: its snapshot's
// derivation, and the last journal tail since, began longer ago than that
// (plus, without a tail, the last derivation's duration).
func (s *Server) snapshotCheck() rx.Observable[*notReady] {
	stale := func(sn Snapshot) *notReady {
		age, bound := s.served.uncovered(sn)
		if age > bound {
			return &notReady{
				reason: fmt.Sprintf("this replica may be missing records landed more than %s ago: neither a derivation nor a journal tail has covered them", bound),
				detail: fmt.Sprintf("snapshot %d derived %s ago; covered up to %s ago; %s; %s", sn.Seq, s.clk.Since(sn.DerivedAt), age, s.served.lastFailure(), s.served.tailState()),
			}
		}
		return nil
	}
	read := rx.SelectMany(rx.Take(s.served.Read(), 1), func(sn Snapshot) rx.Observable[*notReady] {
		if stale(sn) == nil {
			return rx.Return[*notReady](nil)
		}
		// A replica nobody read for a while holds an old snapshot whose
		// re-derivation this read has just started: its outcome decides.
		next := rx.Catch(rx.Take(s.served.inFlight(), 1), func(error) rx.Observable[Snapshot] { return rx.Empty[Snapshot]() })
		// When it has already ended, the snapshot now served decides.
		now := rx.Defer(func() rx.Observable[*notReady] {
			if cur, ok := s.served.Snapshot(); ok {
				return rx.Return(stale(cur))
			}
			return rx.Return(stale(sn))
		})
		return rx.Concat(rx.Map(next, stale), now)
	})
	return rx.Catch(rx.Take(read, 1), func(err error) rx.Observable[*notReady] {
		return rx.Return(&notReady{reason: "the activation snapshot could not be derived", detail: err.Error()})
	})
}

// catalogCheck fails while the package catalog is incomplete: its live
// query (or the store's change feed) is down, so packages whose tier is not
// known are withheld.
func (s *Server) catalogCheck() rx.Observable[*notReady] {
	h := s.catalog.health()
	if complete, _ := s.catalog.Complete(); complete {
		return rx.Return[*notReady](nil)
	}
	reason := "the package catalog is incomplete (its live query or the store's change feed is down): packages whose tier is not known are withheld"
	if !h.ready {
		reason = "the package catalog has not answered yet"
	}
	return rx.Return(&notReady{reason: reason, detail: h.problem})
}

// readinessState remembers each check's last outcome, so that a transition
// logs once and the gauge shows the latest.
type readinessState struct {
	mu    sync.Mutex
	last  map[string]bool // check → ready, as last seen
	gauge *prometheus.GaugeVec

	outcome  readiness // the last evaluation's outcome
	at       time.Time // when it was answered
	has      bool
	inflight *rx.AsyncSubject[readiness] // the evaluation running, if any
}

func newReadinessState() *readinessState {
	return &readinessState{
		last: map[string]bool{},
		gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meshrx_registry_ready",
			Help: "1 while the readiness check passed when /readyz last ran it, 0 while it failed; check=\"all\" is the whole answer.",
		}, []string{"check"}),
	}
}

// record notes the outcome of every check, logging one warning for each
// check that became not ready and one line for each that recovered.
func (r *readinessState) record(ctx context.Context, log *slog.Logger, names []string, failed []checkResult) {
	bad := map[string]checkResult{}
	for _, f := range failed {
		bad[f.Check] = f
	}
	var changed []transition
	r.mu.Lock()
	defer func() { r.logTransitions(ctx, log, changed, bad) }()
	defer r.mu.Unlock()
	for _, n := range names {
		_, isBad := bad[n]
		was, seen := r.last[n]
		if (!seen && isBad) || (seen && was == isBad) {
			changed = append(changed, transition{n, !isBad})
		}
		r.last[n] = !isBad
		r.gauge.WithLabelValues(n).Set(boolGauge(!isBad))
	}
	r.gauge.WithLabelValues("all").Set(boolGauge(len(failed) == 0))
}

// transition is a check that became ready or not ready.
type transition struct {
	name  string
	ready bool
}

func (r *readinessState) logTransitions(ctx context.Context, log *slog.Logger, changed []transition, bad map[string]checkResult) {
	for _, c := range changed {
		if c.ready {
			log.LogAttrs(ctx, slog.LevelInfo, "registry: ready again: "+c.name, slog.String("check", c.name))
			continue
		}
		f := bad[c.name]
		log.LogAttrs(ctx, slog.LevelWarn, "registry: not ready: "+c.name+": "+f.Reason,
			slog.String("check", c.name), slog.String("reason", f.Reason), slog.String("detail", f.detail))
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// readyRoute answers 200 when every readiness check passes, else 503 with
// Retry-After naming each check that did not, with a stable reason. The
// details go to the log, once per transition.
func (s *Server) readyRoute(r *http.Request) rx.Observable[answer.Answer] {
	ledger := answer.LedgerFrom(r.Context())
	return rx.Map(rx.Take(answer.InStage(s.readinessNow(), ledger, StageReadiness), 1), func(body readiness) answer.Answer {
		if len(body.NotReady) == 0 {
			return jsonAnswer(http.StatusOK, body)
		}
		stages := make([]string, len(body.NotReady))
		for i, f := range body.NotReady {
			stages[i] = f.Check
		}
		noteRefusal(r, joinNames(stages))
		a := jsonAnswer(http.StatusServiceUnavailable, body)
		answer.SetRetryAfter(a.Header, 0)
		return a
	})
}

// StageReadiness is the ledger stage of a /readyz request.
const StageReadiness = "readiness checks"

// ReadinessReuse is how long a readiness outcome answers /readyz before
// the checks run again: a flood of /readyz (it is unauthenticated) costs
// the store one probe read per interval, and concurrent requests share the
// evaluation in flight.
const ReadinessReuse = time.Second

// readinessNow answers the last outcome while it is younger than
// ReadinessReuse, else joins the evaluation in flight or starts one. The
// evaluation belongs to the server: a request that leaves does not stop it.
func (s *Server) readinessNow() rx.Observable[readiness] {
	return rx.Defer(func() rx.Observable[readiness] {
		st := s.readiness
		st.mu.Lock()
		if st.has && s.clk.Since(st.at) < ReadinessReuse {
			out := st.outcome
			st.mu.Unlock()
			return rx.Return(out)
		}
		if st.inflight != nil {
			sub := st.inflight
			st.mu.Unlock()
			return sub
		}
		sub := rx.NewAsyncSubject[readiness]()
		st.inflight = sub
		st.mu.Unlock()
		go func() {
			out := s.evaluateReadiness(s.life)
			st.mu.Lock()
			st.outcome, st.at, st.has, st.inflight = out, s.clk.Now(), true, nil
			st.mu.Unlock()
			sub.OnNext(out)
			sub.OnCompleted()
		}()
		return sub
	})
}

// evaluateReadiness runs every check at once, each bounded by
// ReadinessProbeBudget, and records the outcome (logs, gauge).
func (s *Server) evaluateReadiness(ctx context.Context) readiness {
	checks := s.readinessChecks()
	results := make([]*checkResult, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.runCheck(ctx, c)
		}()
	}
	wg.Wait()
	names := make([]string, len(checks))
	body := readiness{Status: "ready", NotReady: []checkResult{}}
	for i, c := range checks {
		names[i] = c.name
		if results[i] != nil {
			body.NotReady = append(body.NotReady, *results[i])
		}
	}
	if len(body.NotReady) > 0 {
		body.Status = "not ready"
	}
	s.readiness.record(ctx, s.log, names, body.NotReady)
	return body
}

// runCheck runs one check within ReadinessProbeBudget; nil means it passed.
func (s *Server) runCheck(ctx context.Context, c readinessCheck) *checkResult {
	src := c.check()
	if src == nil {
		return &checkResult{Check: c.name, Reason: "the check produced no result", detail: "nil observable"}
	}
	bounded := rx.TimeoutStage(src, "readiness: "+c.name, ReadinessProbeBudget, s.clk)
	nr, err := rx.First(ctx, bounded)
	var timeout *rx.TimeoutError
	switch {
	case errors.As(err, &timeout):
		return &checkResult{Check: c.name, Reason: fmt.Sprintf("no answer within %s", ReadinessProbeBudget), detail: err.Error()}
	case ctx.Err() != nil:
		return &checkResult{Check: c.name, Reason: "the registry is closing", detail: err.Error()}
	case errors.Is(err, rx.ErrEmpty):
		return nil
	case err != nil:
		return &checkResult{Check: c.name, Reason: "the check failed", detail: err.Error()}
	case nr != nil:
		return &checkResult{Check: c.name, Reason: nr.reason, detail: nr.detail}
	}
	return nil
}

func joinNames(names []string) string { return strings.Join(names, ", ") }

// liveRoute answers 200 while the process serves HTTP: it reads nothing.
func (s *Server) liveRoute(*http.Request) rx.Observable[answer.Answer] {
	return rx.Return(jsonAnswer(http.StatusOK, struct {
		Status string `json:"status"`
	}{"alive"}))
}
