package answer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// DefaultBudget is a Deadline's budget when it does not say, counted from
// the request's arrival: the registry's index budget.
const DefaultBudget = 25 * time.Second

// DefaultRetryAfter is what every 503 of this module advertises in
// Retry-After when its writer does not say: the Deadline's refusals, auth's
// "could not find out", the registry's busy upload slots and readiness, the
// bell's unavailable store.
const DefaultRetryAfter = 5 * time.Second

// SetRetryAfter sets h's Retry-After to d rounded up to whole seconds; zero
// or less means DefaultRetryAfter. It is the one place a Retry-After is
// spelled.
func SetRetryAfter(h http.Header, d time.Duration) {
	if d <= 0 {
		d = DefaultRetryAfter
	}
	seconds := int64(d / time.Second)
	if d%time.Second != 0 {
		seconds++
	}
	h.Set("Retry-After", strconv.FormatInt(seconds, 10))
}

// Answer is what a registry route produces: a status, headers and a body,
// either in Body or written by Stream.
type Answer struct {
	Status int         // 0 means 200
	Header http.Header // copied onto the response as given
	Body   []byte
	// Stream, when set, writes the body instead of Body, after the status
	// line has been sent.
	Stream func(w io.Writer) error
}

// Deadline makes a route answer or refuse within its budget: a route with
// no answer when the budget runs out answers 503 with Retry-After and a body
// naming the stages it was still waiting on, and logs one warning saying so.
// Refusal bodies carry the stage and a stable reason, never an error's text.
type Deadline struct {
	// Route names the route in logs, e.g. "GET /api/plugins/bundles/index.json";
	// "" uses the request's method and path.
	Route string
	// Budget is the time from the request's arrival (see Arrival) within
	// which the route must answer. Zero means DefaultBudget.
	Budget time.Duration
	// RetryAfter is advertised on a refusal, rounded up to whole seconds.
	// Zero means DefaultRetryAfter.
	RetryAfter time.Duration
	// Clock times the budget; nil means the real clock. It must be the clock
	// the request's ledger was started on.
	Clock clock.Clock
	// Logger receives the refusal lines; nil means slog.Default().
	Logger *slog.Logger
	// Unavailable, when set, names further errors that mean the service
	// could not find out (its own closed stores, say), answered like those
	// CouldNotFindOut knows: 503 with Retry-After.
	Unavailable func(error) bool
}

// httpStatuser is implemented by errors that know the HTTP status they must
// be answered with.
type httpStatuser interface {
	HTTPStatus() int
}

// Handler serves the answer the route produces for each request. It waits
// for the first value of answer(r) for what remains of the budget since the
// request arrived, the time answer(r) took to return included (a budget
// already spent, before answer(r) or by it, refuses at once, without
// subscribing) and for no longer than the request's context lives. When the
// budget runs out or the client leaves, the answer is unsubscribed.
//
// An answer in time is written untouched. An error is refused with the
// status it carries (an error with an HTTPStatus() int method), else 503
// with Retry-After when CouldNotFindOut, else 500 without it.
func (d Deadline) Handler(answer func(r *http.Request) rx.Observable[Answer]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clk := d.clock()
		ledger := LedgerFrom(r.Context())
		if ledger == nil {
			ledger = NewLedger(clk)
			r = r.WithContext(WithLedger(r.Context(), ledger))
		}
		req := deadlineRequest{d: d, w: w, r: r, ledger: ledger, route: d.route(r), budget: d.budget()}
		if r.Context().Err() != nil {
			req.clientLeft()
			return
		}
		if req.budget-ledger.Elapsed() <= 0 {
			req.unanswered()
			return
		}
		src := answer(r)
		if src == nil {
			req.refuse(errors.New("registry: the route produced no answer stream"), http.StatusInternalServerError)
			return
		}
		// What is left is counted after the route built its stream: a
		// route may wait while it builds it (a bounded read on the
		// request's goroutine, as the kept authentication's version read),
		// and the budget runs from arrival whatever the route waited on.
		remaining := req.budget - ledger.Elapsed()
		if remaining <= 0 {
			req.unanswered()
			return
		}
		if now, ok := src.(*nowAnswer); ok {
			// Answered within the call: what First would have got at
			// once, without a budget's timer or a stream.
			if r.Context().Err() != nil {
				req.clientLeft()
				return
			}
			req.write(now.a)
			return
		}
		got, err := rx.First(r.Context(), rx.Timeout(settleAnswer(src), remaining, clk))
		switch {
		case r.Context().Err() != nil:
			req.clientLeft()
		case err == nil && got.err == nil:
			req.write(got.answer)
		case err == nil:
			req.failed(got.err)
		case errors.Is(err, rx.ErrTimeout):
			req.unanswered()
		default: // rx.ErrEmpty: the route completed without answering
			req.refuse(errors.New("registry: the route completed without an answer"), http.StatusInternalServerError)
		}
	})
}

func (d Deadline) clock() clock.Clock {
	if d.Clock == nil {
		return clock.New()
	}
	return d.Clock
}

func (d Deadline) budget() time.Duration {
	if d.Budget <= 0 {
		return DefaultBudget
	}
	return d.Budget
}

func (d Deadline) retryAfter() time.Duration {
	if d.RetryAfter <= 0 {
		return DefaultRetryAfter
	}
	return d.RetryAfter
}

func (d Deadline) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.Default()
	}
	return d.Logger
}

func (d Deadline) route(r *http.Request) string {
	if d.Route != "" {
		return d.Route
	}
	return r.Method + " " + r.URL.Path
}

// Now is an answer a route has at once: Deadline writes it without
// subscribing to a stream (no budget timer, no operators: a poll answered
// from memory costs none of them), and any other subscriber gets it as
// rx.Return(a) gives it.
func Now(a Answer) rx.Observable[Answer] { return &nowAnswer{a: a} }

type nowAnswer struct{ a Answer }

func (n *nowAnswer) Subscribe(o rx.Observer[Answer]) rx.Subscription {
	return rx.Return(n.a).Subscribe(o)
}

// outcome is the route's first answer or its error, as a value, so that the
// only error the budget's Timeout can end with is its own.
type outcome struct {
	answer Answer
	err    error
}

// First takes only the first value and unsubscribes at once, so no Take is
// needed here.
func settleAnswer(src rx.Observable[Answer]) rx.Observable[outcome] {
	answered := rx.Map(src, func(a Answer) outcome { return outcome{answer: a} })
	return rx.Catch(answered, func(err error) rx.Observable[outcome] {
		return rx.Return(outcome{err: err})
	})
}

// deadlineRequest is one request under a Deadline.
type deadlineRequest struct {
	d      Deadline
	w      http.ResponseWriter
	r      *http.Request
	ledger *Ledger
	route  string
	budget time.Duration
}

// write sends an answer given in time, untouched.
func (q *deadlineRequest) write(a Answer) {
	h := q.w.Header()
	for k, vs := range a.Header {
		// The answer's own values, clipped: an append to the response's
		// header makes a new array rather than writing into the answer's.
		h[k] = vs[:len(vs):len(vs)]
	}
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	q.w.WriteHeader(status)
	var err error
	switch {
	case a.Stream != nil:
		err = a.Stream(q.w)
	case len(a.Body) > 0:
		// An empty body is not written: there is nothing to send, and a
		// writer may refuse even an empty write for a status without a
		// body (httptest's does for a 304).
		_, err = q.w.Write(a.Body)
	}
	if err != nil && q.r.Context().Err() == nil {
		q.d.logger().LogAttrs(q.r.Context(), slog.LevelWarn,
			fmt.Sprintf("registry %s: writing the answer failed after its status was sent", q.route),
			slog.String("route", q.route), slog.Int("status", status), slog.String("error", err.Error()))
	}
}

// unanswered refuses a request whose budget ran out, naming what it waited on.
func (q *deadlineRequest) unanswered() {
	pending := q.ledger.Pending()
	stage := RunningStage(pending)
	elapsed := q.ledger.Elapsed()
	attrs := []slog.Attr{
		slog.String("route", q.route),
		slog.String("stage", stage),
		slog.Duration("budget", q.budget),
		slog.Duration("elapsed", elapsed),
	}
	if done := q.ledger.Finished(); len(done) > 0 {
		group := make([]any, 0, len(done))
		for _, s := range done {
			group = append(group, slog.Duration(s.Name, s.Took))
		}
		attrs = append(attrs, slog.Group("finished", group...))
	}
	attrs = append(attrs, slog.String("detail", q.ledger.Describe()))
	// Route and stage are in the message as well as in the attributes, so
	// that two stalled shapes stay two lines even where only the masked
	// message is compared.
	q.d.logger().LogAttrs(q.r.Context(), slog.LevelWarn,
		fmt.Sprintf("registry %s produced no answer within its budget while waiting on %s; answered 503 with Retry-After", q.route, stage),
		attrs...)
	msg := fmt.Sprintf("%s: %s (%s)", stage, reasonNoAnswer, q.budget)
	writeRefusal(q.w, http.StatusServiceUnavailable, q.d.retryAfter(), refusal{Error: msg, Stage: stage, WaitingOn: pending})
}

// failed refuses a request whose route ended with err: with the status it
// carries, else 503 with Retry-After when the registry could not find out
// (see CouldNotFindOut), else 500 without Retry-After, for a failure that
// repeating the request would only repeat.
func (q *deadlineRequest) failed(err error) {
	status := http.StatusInternalServerError
	var s httpStatuser
	switch {
	case errors.As(err, &s) && s.HTTPStatus() >= 400 && s.HTTPStatus() <= 599:
		status = s.HTTPStatus()
	case CouldNotFindOut(err) || (q.d.Unavailable != nil && q.d.Unavailable(err)):
		status = http.StatusServiceUnavailable
	}
	q.refuse(err, status)
}

// CouldNotFindOut reports whether err means the registry could not find
// out (an unavailable or stalled store, a bound that tripped, a resource
// exhausted for now, a service shutting down) rather than a failure that
// would recur: the one kind of failure a registry answers 503 with
// Retry-After.
func CouldNotFindOut(err error) bool {
	return mesh.IsUnavailable(err) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// Stable reasons of the refusals the Deadline writes: the answer says which
// stage and which of these; the error's own text goes to the log only.
const (
	ReasonUnavailable = "could not find out: unavailable; retry after the Retry-After delay"
	// ReasonOutcomeUnknown answers a route whose write reached the store
	// but whose answer did not come (mesh.ErrOutcomeUnknown): it may have
	// been applied. Repeating the request could apply it twice, so the
	// client reads the state back first; a route whose write is safe to
	// repeat says so with RepeatSafe (ReasonOutcomeUnknownRepeatSafe).
	ReasonOutcomeUnknown = "outcome unknown: a write was sent to the store but its answer did not come, so it may have been applied; " +
		"read the state back before repeating the request"
	// ReasonOutcomeUnknownRepeatSafe answers such a write of a route that
	// made it safe to repeat (RepeatSafe): the client repeats the same
	// request.
	ReasonOutcomeUnknownRepeatSafe = "outcome unknown: a write was sent to the store but its answer did not come, so it may have been applied; " +
		"repeat the same request after the Retry-After delay (repeating it is safe)"
	reasonInternal = "internal error; logged by the registry, repeating the request will not help"
	reasonNoAnswer = "no answer within the request's budget"
)

// refuse answers err with status. A 4xx names the caller's mistake in the
// error's own words; a 5xx names only the stage and a stable reason, and
// logs the error once, with its stage.
func (q *deadlineRequest) refuse(err error, status int) {
	waitingOn := []string{}
	var timeout *rx.TimeoutError
	if errors.As(err, &timeout) && timeout.Stage != "" {
		waitingOn = append(waitingOn, timeout.Stage)
	}
	stage := q.ledger.failedStage()
	if stage == "" && len(waitingOn) > 0 {
		stage = waitingOn[0]
	}
	if stage == "" {
		stage = NoStageRunning
	}
	msg, unknown := err.Error(), false
	if status >= 500 {
		level := slog.LevelWarn
		reason := ReasonUnavailable
		switch {
		case status != http.StatusServiceUnavailable:
			level, reason = slog.LevelError, reasonInternal
		case errors.Is(err, mesh.ErrOutcomeUnknown) && errors.As(err, new(*RepeatSafeError)):
			reason, unknown = ReasonOutcomeUnknownRepeatSafe, true
		case errors.Is(err, mesh.ErrOutcomeUnknown):
			reason, unknown = ReasonOutcomeUnknown, true
		}
		q.d.logger().LogAttrs(q.r.Context(), level,
			fmt.Sprintf("registry %s failed in %s; answered %d", q.route, stage, status),
			slog.String("route", q.route), slog.String("stage", stage), slog.Int("status", status), slog.String("error", err.Error()),
			slog.Duration("elapsed", q.ledger.Elapsed()), slog.String("detail", q.ledger.Describe()))
		msg = stage + ": " + reason
	}
	retryAfter := time.Duration(0)
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		retryAfter = q.d.retryAfter()
	}
	writeRefusal(q.w, status, retryAfter, refusal{Error: msg, Stage: stage, WaitingOn: waitingOn, OutcomeUnknown: unknown})
}

// RepeatSafeError marks a route's error as safe to repeat: the route made
// its writes idempotent, so a request whose write's outcome is unknown
// (mesh.ErrOutcomeUnknown) is answered "repeat the same request"
// (ReasonOutcomeUnknownRepeatSafe) rather than "read the state back first".
// It changes nothing else about the answer.
type RepeatSafeError struct {
	Err error
}

func (e *RepeatSafeError) Error() string { return e.Err.Error() }
func (e *RepeatSafeError) Unwrap() error { return e.Err }

// RepeatSafe marks err as safe to repeat (a *RepeatSafeError); nil stays
// nil.
func RepeatSafe(err error) error {
	if err == nil {
		return nil
	}
	return &RepeatSafeError{Err: err}
}

// clientLeft notes a request whose client went away before it was answered.
// Nothing can be written; it is not a failure of the registry's to warn of.
func (q *deadlineRequest) clientLeft() {
	pending := q.ledger.Pending()
	q.d.logger().LogAttrs(q.r.Context(), slog.LevelInfo,
		fmt.Sprintf("registry %s: client had already disconnected while waiting on %s; nothing written", q.route, RunningStage(pending)),
		slog.String("route", q.route),
		slog.String("stage", RunningStage(pending)),
		slog.Duration("budget", q.budget),
		slog.Duration("elapsed", q.ledger.Elapsed()),
		slog.String("detail", q.ledger.Describe()))
}

// NoStageRunning stands for the stage in a refusal's log line when nothing
// in the ledger was running (the budget was spent by stages that finished,
// or by work that entered no stage).
const NoStageRunning = "no stage running"

// RunningStage names the stages still pending, or NoStageRunning.
func RunningStage(pending []string) string {
	if len(pending) == 0 {
		return NoStageRunning
	}
	return strings.Join(pending, ", ")
}

// refusal is the JSON body of every answer the Deadline writes itself.
type refusal struct {
	Error     string   `json:"error"`
	Stage     string   `json:"stage"`
	WaitingOn []string `json:"waitingOn"`
	// OutcomeUnknown says a write the request made may have been applied
	// (see ReasonOutcomeUnknown); absent otherwise.
	OutcomeUnknown bool `json:"outcomeUnknown,omitempty"`
}

func writeRefusal(w http.ResponseWriter, status int, retryAfter time.Duration, body refusal) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		SetRetryAfter(h, retryAfter)
	}
	w.WriteHeader(status)
	// A write error means the client has gone; there is nobody to tell.
	_ = json.NewEncoder(w).Encode(body)
}
