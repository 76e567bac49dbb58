package answer

import (
	"crypto/rand"
	"github.com/meshrx/meshrx/internal/testkit"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// reply is what the test's HTTP client got.
type reply struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// refusalBody decodes a refusal, failing the test if it is not one.
func (r reply) refusal(t *testing.T) refusal {
	t.Helper()
	var body refusal
	require.NoError(t, json.Unmarshal(r.body, &body), "body %q", r.body)
	require.NotNil(t, body.WaitingOn, "waitingOn must be a list, never null: %s", r.body)
	return body
}

// serve runs h on a real HTTP server for the test.
func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// fetch sends GET path in the background; the reply arrives on the channel.
// The request ends with ctx at the latest (the test's context is cancelled
// before the server is closed).
func fetch(ctx context.Context, srv *httptest.Server, path string) <-chan reply {
	out := make(chan reply, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		if err != nil {
			out <- reply{err: err}
			return
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			out <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		out <- reply{status: resp.StatusCode, header: resp.Header, body: body, err: err}
	}()
	return out
}

// announced subscribes src, then closes subscribed: a request that has
// reached it has also armed every bound set up before it.
func announced[T any](src rx.Observable[T], subscribed chan<- struct{}) rx.Observable[T] {
	return rx.Merge(src, rx.Defer(func() rx.Observable[T] {
		close(subscribed)
		return rx.Empty[T]()
	}))
}

// stalledRoute is a route that never answers: it waits in stage forever,
// closes reached once it waits there, and closes abandoned when it is
// unsubscribed.
func stalledRoute(stage string, reached, abandoned chan struct{}) func(*http.Request) rx.Observable[Answer] {
	return func(r *http.Request) rx.Observable[Answer] {
		never := rx.Finally(rx.Never[Answer](), func() { close(abandoned) })
		return announced(InStage(never, LedgerFrom(r.Context()), stage), reached)
	}
}

// stageBefore is a middleware that spends d of virtual time in stage (as the
// instance-key check does) before passing the request on. It closes reached
// once its timer is armed.
func stageBefore(clk *rxtest.Clock, stage string, d time.Duration, reached chan struct{}, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := InStage(rx.Timer(d, clk), LedgerFrom(r.Context()), stage)
		if _, err := rx.First(r.Context(), announced(wait, reached)); err != nil {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireOpen fails if ch is closed now.
func requireOpen(t *testing.T, ch <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
		require.FailNow(t, msg)
	default:
	}
}

func TestANeverAnsweringStageAnswers503WithinTheBudgetNamingIt(t *testing.T) {
	clk := rxtest.NewClock()
	logs, logger := testkit.CaptureLogs()
	reached, abandoned := make(chan struct{}), make(chan struct{})
	d := Deadline{Route: "GET " + indexPath, Budget: DefaultBudget, RetryAfter: 30 * time.Second, Clock: clk, Logger: logger}
	srv := serve(t, Arrival(clk, d.Handler(stalledRoute("pushed artifacts record", reached, abandoned))))

	replies := fetch(t.Context(), srv, indexPath)
	testkit.Receive(t, reached, "the request reaching the pushed artifacts record")

	clk.Advance(DefaultBudget - time.Nanosecond)
	// The budget's timer runs inside Advance: had it fired, the stage would
	// already be unsubscribed.
	requireOpen(t, abandoned, "the deadline tripped before its budget")
	assert.Empty(t, logs.AtOrAbove(slog.LevelInfo))

	clk.Advance(time.Nanosecond)
	testkit.Receive(t, abandoned, "the stalled stage being unsubscribed when the budget ran out")
	got := testkit.Receive(t, replies, "the refusal")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	assert.Equal(t, "30", got.header.Get("Retry-After"))
	assert.Equal(t, "application/json", got.header.Get("Content-Type"))
	body := got.refusal(t)
	assert.Equal(t, []string{"pushed artifacts record"}, body.WaitingOn)
	assert.Contains(t, body.Error, "pushed artifacts record")

	records := logs.AtOrAbove(slog.LevelInfo)
	require.Len(t, records, 1, "exactly one line for one refusal")
	w := records[0]
	assert.Equal(t, slog.LevelWarn, w.Level)
	assert.Equal(t, "GET "+indexPath, w.Attrs["route"].String())
	assert.Equal(t, "pushed artifacts record", w.Attrs["stage"].String())
	assert.Equal(t, DefaultBudget, w.Attrs["budget"].Duration())
	assert.Equal(t, DefaultBudget, w.Attrs["elapsed"].Duration())
	assert.Contains(t, w.Message, "pushed artifacts record")
}

func TestTwoStalledShapesLeaveTwoDistinguishableWarnings(t *testing.T) {
	clk := rxtest.NewClock()
	logs, logger := testkit.CaptureLogs()
	indexReached, indexLeft := make(chan struct{}), make(chan struct{})
	bundleReached, bundleLeft := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("GET "+indexPath, Deadline{Route: "GET " + indexPath, Budget: DefaultBudget, Clock: clk, Logger: logger}.
		Handler(stalledRoute("pushed artifacts record", indexReached, indexLeft)))
	mux.Handle("GET "+bundlesPath+"/{plugin}/{version}", Deadline{Budget: downloadBudget, Clock: clk, Logger: logger}.
		Handler(stalledRoute("module activation list", bundleReached, bundleLeft)))
	srv := serve(t, Arrival(clk, mux))

	index := fetch(t.Context(), srv, indexPath)
	testkit.Receive(t, indexReached, "the index request reaching its stage")
	bundle := fetch(t.Context(), srv, bundlesPath+"/Acme.Crm/1.2.0")
	testkit.Receive(t, bundleReached, "the download reaching its stage")

	clk.Advance(DefaultBudget)
	assert.Equal(t, http.StatusServiceUnavailable, testkit.Receive(t, index, "the index refusal").status)
	requireOpen(t, bundleLeft, "the download has its own, longer budget")
	clk.Advance(downloadBudget - DefaultBudget)
	assert.Equal(t, http.StatusServiceUnavailable, testkit.Receive(t, bundle, "the download refusal").status)

	warns := logs.At(slog.LevelWarn)
	require.Len(t, warns, 2)
	assert.NotEqual(t, warns[0].Message, warns[1].Message, "two shapes must not fold into one message")
	assert.Equal(t, []string{"GET " + indexPath, "GET " + bundlesPath + "/Acme.Crm/1.2.0"},
		[]string{warns[0].Attrs["route"].String(), warns[1].Attrs["route"].String()})
	assert.Equal(t, []string{"pushed artifacts record", "module activation list"},
		[]string{warns[0].Attrs["stage"].String(), warns[1].Attrs["stage"].String()})
	assert.Equal(t, downloadBudget, warns[1].Attrs["budget"].Duration())
}

func TestAnAnswerInsideTheBudgetPassesUntouchedWithNoLog(t *testing.T) {
	clk := rxtest.NewClock()
	logs, logger := testkit.CaptureLogs()
	payload := randomBytes(64 << 10)
	header := http.Header{
		"Etag":         {`"gen-7"`},
		"Content-Type": {"application/zip"},
		"X-Bundle":     {"Acme.Crm", "1.2.0"},
	}
	bodyReached, streamReached := make(chan struct{}), make(chan struct{})
	later := func(r *http.Request, reached chan struct{}, a Answer) rx.Observable[Answer] {
		assembled := rx.Map(rx.Timer(5*time.Second, clk), func(time.Time) Answer { return a })
		return announced(InStage(assembled, LedgerFrom(r.Context()), "bundle assembly"), reached)
	}
	d := Deadline{Budget: DefaultBudget, Clock: clk, Logger: logger}
	mux := http.NewServeMux()
	mux.Handle("GET /body", d.Handler(func(r *http.Request) rx.Observable[Answer] {
		return later(r, bodyReached, Answer{Status: http.StatusNonAuthoritativeInfo, Header: header, Body: payload})
	}))
	mux.Handle("GET /stream", d.Handler(func(r *http.Request) rx.Observable[Answer] {
		return later(r, streamReached, Answer{Header: header, Stream: func(w io.Writer) error {
			for chunk := range slices.Chunk(payload, 4096) {
				if _, err := w.Write(chunk); err != nil {
					return err
				}
			}
			return nil
		}})
	}))
	srv := serve(t, Arrival(clk, mux))

	fromBody := fetch(t.Context(), srv, "/body")
	testkit.Receive(t, bodyReached, "the body route assembling")
	fromStream := fetch(t.Context(), srv, "/stream")
	testkit.Receive(t, streamReached, "the stream route assembling")
	clk.Advance(5 * time.Second)

	for _, c := range []struct {
		name   string
		got    reply
		status int
	}{
		{"body", testkit.Receive(t, fromBody, "the body answer"), http.StatusNonAuthoritativeInfo},
		{"stream", testkit.Receive(t, fromStream, "the streamed answer"), http.StatusOK},
	} {
		require.NoError(t, c.got.err, c.name)
		assert.Equal(t, c.status, c.got.status, c.name)
		for k, vs := range header {
			assert.Equal(t, vs, c.got.header.Values(k), "%s: header %s", c.name, k)
		}
		assert.Empty(t, c.got.header.Get("Retry-After"), c.name)
		assert.True(t, bytes.Equal(payload, c.got.body), "%s: the body must arrive byte for byte", c.name)
	}

	// The budget's timers were disarmed by the answers: running the clock
	// far past the budget must log nothing. A deadline that kept its timer
	// would log a warning here.
	clk.Advance(2 * DefaultBudget)
	assert.Zero(t, clk.Pending(), "no timer may outlive an answered request")
	assert.Empty(t, logs.AtOrAbove(slog.LevelDebug))
}

func TestTheBudgetCountsFromArrivalNotFromTheHandler(t *testing.T) {
	const keyCheck = 10 * time.Second
	run := func(t *testing.T, withArrival bool) (reply <-chan reply, abandoned chan struct{}, logs *testkit.Logs, clk *rxtest.Clock) {
		clk = rxtest.NewClock()
		logs, logger := testkit.CaptureLogs()
		keyReached, reached := make(chan struct{}), make(chan struct{})
		abandoned = make(chan struct{})
		route := Deadline{Route: "GET " + indexPath, Budget: DefaultBudget, Clock: clk, Logger: logger}.
			Handler(stalledRoute("pushed artifacts record", reached, abandoned))
		var h http.Handler = stageBefore(clk, "instance key", keyCheck, keyReached, route)
		if withArrival {
			h = Arrival(clk, h)
		}
		srv := serve(t, h)
		reply = fetch(t.Context(), srv, indexPath)
		testkit.Receive(t, keyReached, "the request reaching the key check")
		clk.Advance(keyCheck)
		testkit.Receive(t, reached, "the request reaching the route's stage")
		clk.Advance(DefaultBudget - keyCheck - time.Nanosecond)
		requireOpen(t, abandoned, "the deadline tripped before arrival+budget")
		clk.Advance(time.Nanosecond)
		return reply, abandoned, logs, clk
	}

	t.Run("from arrival", func(t *testing.T) {
		replies, abandoned, logs, _ := run(t, true)
		testkit.Receive(t, abandoned, "the route being unsubscribed at arrival+budget exactly")
		got := testkit.Receive(t, replies, "the refusal")
		require.NoError(t, got.err)
		assert.Equal(t, http.StatusServiceUnavailable, got.status)
		assert.Equal(t, []string{"pushed artifacts record"}, got.refusal(t).WaitingOn)

		warns := logs.At(slog.LevelWarn)
		require.Len(t, warns, 1)
		assert.Equal(t, DefaultBudget, warns[0].Attrs["elapsed"].Duration())
		assert.Equal(t, keyCheck, warns[0].Attrs["finished.instance key"].Duration(),
			"the finished stage is named with how long it took")
		assert.Equal(t, "pushed artifacts record", warns[0].Attrs["stage"].String())
	})

	// Negative control: without Arrival the ledger starts in the handler,
	// so at arrival+budget the request is still held; it is refused only a
	// full budget after the handler ran.
	t.Run("from the handler, the defect", func(t *testing.T) {
		replies, abandoned, logs, clk := run(t, false)
		requireOpen(t, abandoned, "counted from the handler, the budget is not spent at arrival+budget")
		assert.Empty(t, logs.AtOrAbove(slog.LevelInfo))
		clk.Advance(keyCheck)
		testkit.Receive(t, abandoned, "the late refusal")
		assert.Equal(t, http.StatusServiceUnavailable, testkit.Receive(t, replies, "the late refusal").status)
	})
}

func TestABudgetSpentBeforeTheHandlerRanRefusesAtOnce(t *testing.T) {
	const keyCheck = DefaultBudget + 5*time.Second
	clk := rxtest.NewClock()
	logs, logger := testkit.CaptureLogs()
	keyReached := make(chan struct{})
	asked := 0
	var mu sync.Mutex
	route := Deadline{Route: "GET " + indexPath, Budget: DefaultBudget, Clock: clk, Logger: logger}.
		Handler(func(r *http.Request) rx.Observable[Answer] {
			mu.Lock()
			asked++
			mu.Unlock()
			return rx.Never[Answer]()
		})
	srv := serve(t, Arrival(clk, stageBefore(clk, "instance key", keyCheck, keyReached, route)))

	replies := fetch(t.Context(), srv, indexPath)
	testkit.Receive(t, keyReached, "the request reaching the key check")
	clk.Advance(keyCheck)

	// No further Advance: a handler that gave the route a fresh budget would
	// hold the request here, and the bounded receive would fail.
	got := testkit.Receive(t, replies, "the immediate refusal")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	assert.NotEmpty(t, got.header.Get("Retry-After"))
	assert.Equal(t, []string{}, got.refusal(t).WaitingOn, "nothing was running when the budget was found spent")
	mu.Lock()
	assert.Zero(t, asked, "a spent budget refuses without asking the route")
	mu.Unlock()

	warns := logs.At(slog.LevelWarn)
	require.Len(t, warns, 1)
	assert.Equal(t, keyCheck, warns[0].Attrs["elapsed"].Duration())
	assert.Equal(t, keyCheck, warns[0].Attrs["finished.instance key"].Duration())
	assert.Equal(t, NoStageRunning, warns[0].Attrs["stage"].String())
}

func TestAClientThatLeftGetsAnInformationLineNotAWarning(t *testing.T) {
	clk := rxtest.NewClock()
	logs, logger := testkit.CaptureLogs()
	reached, abandoned := make(chan struct{}), make(chan struct{})
	d := Deadline{Route: "GET " + indexPath, Budget: DefaultBudget, Clock: clk, Logger: logger}
	srv := serve(t, Arrival(clk, d.Handler(stalledRoute("pushed artifacts record", reached, abandoned))))

	ctx, leave := context.WithCancel(t.Context())
	replies := fetch(ctx, srv, indexPath)
	testkit.Receive(t, reached, "the request reaching its stage")
	clk.Advance(3 * time.Second)
	leave()

	assert.ErrorIs(t, testkit.Receive(t, replies, "the client giving up").err, context.Canceled)
	testkit.Receive(t, abandoned, "the route being unsubscribed once the client left")
	line := testkit.Receive(t, logs.Added, "the line about the client that left")
	// The budget passing afterwards must not add a warning: the request is over.
	clk.Advance(DefaultBudget)

	assert.Equal(t, slog.LevelInfo, line.Level)
	assert.Contains(t, line.Message, "client had already disconnected")
	assert.Equal(t, "pushed artifacts record", line.Attrs["stage"].String())
	assert.Equal(t, 3*time.Second, line.Attrs["elapsed"].Duration())
	assert.Len(t, logs.AtOrAbove(slog.LevelInfo), 1, "one line, and no warning: the registry did not fail anyone")
	assert.Empty(t, logs.At(slog.LevelWarn))
}

// statusError is an error that knows its HTTP status.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string   { return e.msg }
func (e *statusError) HTTPStatus() int { return e.status }

func TestOnlyCouldNotFindOutIsA503AndAnyOtherRouteErrorA500WithoutRetryAfter(t *testing.T) {
	clk := rxtest.NewClock()
	logs, logger := testkit.CaptureLogs()
	d := Deadline{Budget: DefaultBudget, RetryAfter: 7 * time.Second, Clock: clk, Logger: logger}
	failing := func(err error) http.Handler {
		return d.Handler(func(r *http.Request) rx.Observable[Answer] {
			return InStage(rx.Throw[Answer](err), LedgerFrom(r.Context()), "bundle read")
		})
	}
	bug := errors.New("registry: assembling failed: index out of range [3] with length 3")
	storeDown := &mesh.UnavailableError{Op: "read Plugins/A", Err: errors.New("failed to connect to user=postgres database=meshrx")}
	fdsOut := &fs.PathError{Op: "openat", Path: "modules/demo.hello/records", Err: syscall.EMFILE}
	mux := http.NewServeMux()
	mux.Handle("GET /bug", failing(bug))
	mux.Handle("GET /store", failing(storeDown))
	mux.Handle("GET /fds", failing(fdsOut))
	mux.Handle("GET /deadline", failing(fmt.Errorf("reading: %w", context.DeadlineExceeded)))
	// Negative control: the same bug wrapped as an availability error is a
	// 503, so the 500 above comes from what the error is, nothing else.
	mux.Handle("GET /bug-as-unavailable", failing(&mesh.UnavailableError{Op: "x", Err: bug}))
	mux.Handle("GET /gone", failing(fmt.Errorf("wrapped: %w", &statusError{http.StatusGone, "publication withdrawn"})))
	mux.Handle("GET /stage", d.Handler(func(*http.Request) rx.Observable[Answer] {
		return rx.Throw[Answer](&rx.TimeoutError{Stage: "instance key", After: 10 * time.Second})
	}))
	srv := serve(t, Arrival(clk, mux))

	got := testkit.Receive(t, fetch(t.Context(), srv, "/bug"), "/bug")
	assert.Equal(t, http.StatusInternalServerError, got.status)
	assert.Empty(t, got.header.Get("Retry-After"), "a bug is not 'retry later'")
	assert.Equal(t, refusal{Error: "bundle read: " + reasonInternal, Stage: "bundle read", WaitingOn: []string{}}, got.refusal(t))
	errs := logs.At(slog.LevelError)
	require.Len(t, errs, 1, "logged once")
	assert.Equal(t, "bundle read", errs[0].Attrs["stage"].String())
	assert.Contains(t, errs[0].Attrs["error"].String(), "index out of range", "the detail goes to the log")

	for _, path := range []string{"/store", "/fds", "/deadline", "/bug-as-unavailable"} {
		got := testkit.Receive(t, fetch(t.Context(), srv, path), path)
		assert.Equal(t, http.StatusServiceUnavailable, got.status, path)
		assert.Equal(t, "7", got.header.Get("Retry-After"), path)
		assert.Equal(t, refusal{Error: "bundle read: " + ReasonUnavailable, Stage: "bundle read", WaitingOn: []string{}}, got.refusal(t), path)
		for _, internal := range []string{"postgres", "openat", "modules/", "too many open files", "deadline", "index out of range"} {
			assert.NotContains(t, string(got.body), internal, "%s: no internal text in the answer", path)
		}
	}

	gone := testkit.Receive(t, fetch(t.Context(), srv, "/gone"), "/gone")
	assert.Equal(t, http.StatusGone, gone.status)
	assert.Empty(t, gone.header.Get("Retry-After"), "only an availability refusal asks to retry")
	assert.Equal(t, "wrapped: publication withdrawn", gone.refusal(t).Error, "a 4xx tells the caller its mistake")

	stage := testkit.Receive(t, fetch(t.Context(), srv, "/stage"), "/stage")
	assert.Equal(t, http.StatusServiceUnavailable, stage.status)
	assert.Equal(t, []string{"instance key"}, stage.refusal(t).WaitingOn, "a stage's own bound names the stage")
	assert.Equal(t, "instance key", stage.refusal(t).Stage)

	assert.Len(t, logs.At(slog.LevelWarn), 5, "each 503 leaves a warning; the 410 is the route's answer, not a failure")
}

func TestWithoutTheDeadlineTheRequestIsHeld(t *testing.T) {
	// The negative control of the tests above: the same stalled route served
	// without a Deadline gives the client no status line at all, however far
	// the clock runs. That silence is the defect the Deadline removes.
	const patience = 300 * time.Millisecond
	clk := rxtest.NewClock()
	reached, abandoned := make(chan struct{}), make(chan struct{})
	route := stalledRoute("pushed artifacts record", reached, abandoned)
	held := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, err := rx.First(r.Context(), route(r))
		if err != nil {
			return
		}
		w.WriteHeader(a.Status)
	})
	srv := serve(t, Arrival(clk, held))

	// The client's patience starts once the clock has run past every
	// budget: a timeout from the fetch, as it was, could pass before a
	// loaded machine's request reached its stage.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	replies := fetch(ctx, srv, indexPath)
	testkit.Receive(t, reached, "the request reaching its stage")
	clk.Advance(10 * DefaultBudget)
	select {
	case got := <-replies:
		require.Failf(t, "the held request was answered", "status %d, error %v", got.status, got.err)
	case <-time.After(patience):
	}
	cancel() // the client gives up

	got := testkit.Receive(t, replies, "the client's giving up")
	require.ErrorIs(t, got.err, context.Canceled, "no status line within %s", patience)
	assert.Zero(t, got.status)
	testkit.Receive(t, abandoned, "the held request ending when its client left")
}

// Paths the tests serve routes on, as a registry would.
const (
	indexPath   = "/api/plugins/bundles/index.json"
	bundlesPath = "/api/plugins/bundles"
)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// downloadBudget is the registry's bundle download budget.
const downloadBudget = 60 * time.Second

// A route whose write was sent but whose answer did not come
// (mesh.ErrOutcomeUnknown, as pgstore reports a write whose budget ran out
// after it was sent) is a 503 with Retry-After whose body says the write
// may have been applied ("outcomeUnknown": true), so a client neither
// takes it for "nothing happened" nor for a failure not worth repeating.
// Only a route that marked its error RepeatSafe (its write is idempotent)
// tells the client to repeat the same request; an unmarked one tells it to
// read the state back before repeating. A plain unavailable store keeps
// the plain reason and no such field.
//
// Negative controls (run): without the ErrOutcomeUnknown cases in refuse,
// the write's answers read "could not find out: unavailable" and the
// reason and outcomeUnknown assertions failed; with the RepeatSafe
// condition dropped from the first case (every outcome-unknown answer
// "repeating it is safe", as before), the unmarked answer's reason
// assertion and its NotContains "repeating it is safe" failed.
func TestAWriteWhoseOutcomeIsUnknownIsA503SayingItMayHaveBeenApplied(t *testing.T) {
	clk := rxtest.NewClock()
	logs, logger := testkit.CaptureLogs()
	d := Deadline{Budget: DefaultBudget, RetryAfter: 7 * time.Second, Clock: clk, Logger: logger}
	failing := func(err error) http.Handler {
		return d.Handler(func(r *http.Request) rx.Observable[Answer] {
			return InStage(rx.Throw[Answer](err), LedgerFrom(r.Context()), "package node")
		})
	}
	sent := fmt.Errorf("registry: writing the package node of Acme.Crm: %w", &mesh.UnavailableError{Op: "put Plugins/acme.crm",
		Err: fmt.Errorf("pgstore: the write may have committed: %w", errors.Join(mesh.ErrOutcomeUnknown, context.DeadlineExceeded))})
	notSent := fmt.Errorf("registry: writing the package node of Acme.Crm: %w", &mesh.UnavailableError{Op: "put Plugins/acme.crm",
		Err: fmt.Errorf("pgstore: no answer within 15s while put Plugins/acme.crm: %w", context.DeadlineExceeded)})
	mux := http.NewServeMux()
	mux.Handle("GET /sent-repeat-safe", failing(RepeatSafe(sent)))
	mux.Handle("GET /sent", failing(sent))
	mux.Handle("GET /not-sent", failing(notSent))
	srv := serve(t, Arrival(clk, mux))

	safe := testkit.Receive(t, fetch(t.Context(), srv, "/sent-repeat-safe"), "/sent-repeat-safe")
	require.NoError(t, safe.err)
	assert.Equal(t, http.StatusServiceUnavailable, safe.status)
	assert.Equal(t, "7", safe.header.Get("Retry-After"), "repeat it later")
	assert.Equal(t, refusal{Error: "package node: " + ReasonOutcomeUnknownRepeatSafe, Stage: "package node", WaitingOn: []string{}, OutcomeUnknown: true},
		safe.refusal(t))
	assert.Contains(t, string(safe.body), `"outcomeUnknown":true`)
	assert.Contains(t, string(safe.body), "may have been applied")
	assert.Contains(t, string(safe.body), "repeating it is safe")
	assert.NotContains(t, string(safe.body), "pgstore", "no internal text in the answer")

	got := testkit.Receive(t, fetch(t.Context(), srv, "/sent"), "/sent")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	assert.Equal(t, "7", got.header.Get("Retry-After"))
	assert.Equal(t, refusal{Error: "package node: " + ReasonOutcomeUnknown, Stage: "package node", WaitingOn: []string{}, OutcomeUnknown: true},
		got.refusal(t))
	assert.Contains(t, string(got.body), `"outcomeUnknown":true`)
	assert.Contains(t, string(got.body), "may have been applied")
	assert.Contains(t, string(got.body), "read the state back before repeating")
	assert.NotContains(t, string(got.body), "repeating it is safe", "not marked safe to repeat: it does not say so")
	assert.NotContains(t, string(got.body), "pgstore", "no internal text in the answer")

	plain := testkit.Receive(t, fetch(t.Context(), srv, "/not-sent"), "/not-sent")
	require.NoError(t, plain.err)
	assert.Equal(t, http.StatusServiceUnavailable, plain.status)
	assert.Equal(t, refusal{Error: "package node: " + ReasonUnavailable, Stage: "package node", WaitingOn: []string{}}, plain.refusal(t))
	assert.NotContains(t, string(plain.body), "outcomeUnknown")
	assert.Len(t, logs.At(slog.LevelWarn), 3, "each 503 leaves a warning")
}

// The budget runs from arrival through the time the route takes to build
// its stream (a route may wait while it builds it: the kept
// authentication's version read, bounded on the request's goroutine): a
// route that spent build of it before returning a stream that never
// answers is refused at arrival+budget exactly, and one that spent more
// than the budget before returning an answer at once (Now) is refused,
// as the same answer arriving on a stream after the budget would be.
// Negative control (run): with what is left counted before the route
// was asked (as in 153d556), the stalled route was still held at
// arrival+budget (the bounded receive of its abandonment failed), and
// the late Now answer was written (204).
func TestTheBudgetCountsTheTimeTheRouteTookToBuildItsStream(t *testing.T) {
	const budget, build = 10 * time.Second, 8 * time.Second
	t.Run("a stream", func(t *testing.T) {
		clk := rxtest.NewClock()
		building, reached, abandoned := make(chan struct{}), make(chan struct{}), make(chan struct{})
		stalled := stalledRoute("pushed artifacts record", reached, abandoned)
		route := Deadline{Route: "GET " + indexPath, Budget: budget, Clock: clk}.
			Handler(func(r *http.Request) rx.Observable[Answer] {
				// A bounded wait on the request's goroutine, before the stream.
				if _, err := rx.First(r.Context(), announced(rx.Timer(build, clk), building)); err != nil {
					return rx.Throw[Answer](err)
				}
				return stalled(r)
			})
		replies := fetch(t.Context(), serve(t, Arrival(clk, route)), indexPath)
		testkit.Receive(t, building, "the route building its stream")
		clk.Advance(build)
		testkit.Receive(t, reached, "the route's stream being subscribed")
		clk.Advance(budget - build - time.Nanosecond)
		requireOpen(t, abandoned, "the deadline tripped before arrival+budget")
		clk.Advance(time.Nanosecond)
		testkit.Receive(t, abandoned, "the route being unsubscribed at arrival+budget exactly")
		got := testkit.Receive(t, replies, "the refusal")
		require.NoError(t, got.err)
		assert.Equal(t, http.StatusServiceUnavailable, got.status)
	})
	t.Run("an answer at once, after the budget", func(t *testing.T) {
		clk := rxtest.NewClock()
		building := make(chan struct{})
		route := Deadline{Route: "GET " + indexPath, Budget: budget, Clock: clk}.
			Handler(func(r *http.Request) rx.Observable[Answer] {
				if _, err := rx.First(r.Context(), announced(rx.Timer(budget+time.Second, clk), building)); err != nil {
					return rx.Throw[Answer](err)
				}
				return Now(Answer{Status: http.StatusNoContent})
			})
		replies := fetch(t.Context(), serve(t, Arrival(clk, route)), indexPath)
		testkit.Receive(t, building, "the route building its answer")
		clk.Advance(budget + time.Second)
		got := testkit.Receive(t, replies, "the refusal")
		require.NoError(t, got.err)
		assert.Equal(t, http.StatusServiceUnavailable, got.status, "answered after the budget: refused")
	})
}
