package auth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// instanceEcho answers 200 with the id of the instance Middleware resolved.
var instanceEcho = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	res, ok := FromContext(r.Context())
	if !ok {
		http.Error(w, "no auth result in the context", http.StatusInternalServerError)
		return
	}
	_, _ = io.WriteString(w, res.Instance.ID)
})

type httpAnswer struct {
	status     int
	retryAfter string
	body       string
	reason     string
}

func server(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// get sends GET / with an Authorization header (none when blank), bounded in
// real time.
func get(t *testing.T, srv *httptest.Server, authorization string) httpAnswer {
	t.Helper()
	return <-getAsync(t, srv, authorization)
}

func getAsync(t *testing.T, srv *httptest.Server, authorization string) <-chan httpAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	out := make(chan httpAnswer, 1)
	go func() {
		defer cancel()
		resp, err := srv.Client().Do(req)
		if err != nil {
			out <- httpAnswer{status: -1, body: err.Error()}
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		a := httpAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(body)}
		var parsed struct{ Reason string }
		if json.Unmarshal(body, &parsed) == nil {
			a.reason = parsed.Reason
		}
		out <- a
	}()
	return out
}

func TestMiddlewareAnswers401WithoutAKeyOrWithAMalformedOneAndReadsNothing(t *testing.T) {
	f := newFixture(t)
	srv := server(t, Middleware(f.authenticator(nil), instanceEcho))
	for _, h := range []string{"", "Bearer not-a-key", "Basic bm9wZQ=="} {
		a := get(t, srv, h)
		assert.Equal(t, http.StatusUnauthorized, a.status, "header %q", h)
	}
	assert.Zero(t, f.store.reads())
	assert.Zero(t, f.clk.Pending())
}

func TestMiddlewareAnswers401ForUnknownRevokedAndDisabledKeys(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	srv := server(t, Middleware(f.authenticator(nil), instanceEcho))

	// Negative control first: the key works.
	require.Equal(t, http.StatusOK, get(t, srv, bearer(f.key)).status)

	unknown, err := NewKey()
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, get(t, srv, bearer(unknown)).status, "unknown")

	disabled, err := f.reg.IssueKey(ctx, "acme")
	require.NoError(t, err)
	require.NoError(t, f.reg.Disable(ctx, "acme"))
	assert.Equal(t, http.StatusUnauthorized, get(t, srv, bearer(disabled)).status, "disabled")
	require.NoError(t, f.reg.Enable(ctx, "acme"))

	require.NoError(t, f.reg.RevokeKey(ctx, "acme", f.key))
	assert.Equal(t, http.StatusUnauthorized, get(t, srv, bearer(f.key)).status, "revoked")
	assert.Equal(t, http.StatusOK, get(t, srv, bearer(disabled)).status, "the other key still works")
}

func TestMiddlewarePassesAValidKeyOnWithTheInstanceInTheContext(t *testing.T) {
	f := newFixture(t)
	a := get(t, server(t, Middleware(f.authenticator(nil), instanceEcho)), bearer(f.key))
	assert.Equal(t, http.StatusOK, a.status)
	assert.Equal(t, "acme", a.body)

	// Negative control: the same handler without Middleware finds no Result.
	assert.Equal(t, http.StatusInternalServerError, get(t, server(t, instanceEcho), bearer(f.key)).status)
}

func TestAStalledLegAnswers503WithinItsBudgetNamingTheLeg(t *testing.T) {
	for _, stage := range []string{StageInstanceKey, StageInstance, StageGrant, StagePlanTiers} {
		t.Run(stage, func(t *testing.T) {
			f := newFixture(t)
			for _, l := range stallKeys(f) {
				if l.stage == stage {
					f.store.stall(l.key)
				}
			}
			srv := server(t, Middleware(f.authenticator(nil), instanceEcho))
			pending := getAsync(t, srv, bearer(f.key))
			for _, l := range stallKeys(f) {
				if l.stage == stage {
					f.store.waitEntered(t, l.key)
				}
			}

			f.clk.Advance(DefaultReadBudget - time.Nanosecond)
			assert.Equal(t, 1, f.clk.Pending(), "the leg's bound has not tripped early; the request waits on it")
			f.clk.Advance(time.Nanosecond)

			a := testkit.Receive(t, pending, "the middleware's answer")
			assert.Equal(t, http.StatusServiceUnavailable, a.status)
			assert.Equal(t, "5", a.retryAfter)
			assert.Equal(t, stage+": no answer within 10s", a.reason)
			assert.Contains(t, a.body, "NOT a statement about your key or your grant")
		})
	}
}

func TestAFailingStoreAnswers503Never401(t *testing.T) {
	f := newFixture(t)
	srv := server(t, Middleware(f.authenticator(nil), instanceEcho))
	require.Equal(t, http.StatusOK, get(t, srv, bearer(f.key)).status, "negative control: healthy")

	f.store.fail(GrantPath("acme"), errors.New("i/o error"))
	a := get(t, srv, bearer(f.key))
	assert.Equal(t, http.StatusServiceUnavailable, a.status)
	assert.Equal(t, "grant: the read failed (the server's log says why)", a.reason)

	require.NoError(t, f.store.Close())
	a = get(t, srv, bearer(f.key))
	assert.Equal(t, http.StatusServiceUnavailable, a.status)
	// The key authenticated before: its first read is its instance (the
	// index read is skipped, see authMemo), and that is the leg named.
	assert.Equal(t, StageInstance+": the store is unavailable", a.reason)

	// A missing key is still a fast 401 on a dead store: that speaks of the
	// header, not of the store.
	assert.Equal(t, http.StatusUnauthorized, get(t, srv, "").status)
}

// A 503 names the leg and why in fixed words, never the store's error,
// which may name the database, its host and its user (pgx's connection
// errors do); that goes to the log. Negative control (run): with the
// error's text as the reason (as before), every row's body held the
// secrets.
func TestA503NeverCarriesTheStoresErrorText(t *testing.T) {
	const secret = "failed to connect to `user=regadmin database=registry`: 10.20.30.40:5432: dial error"
	for _, c := range []struct {
		name, reason string
		err          error
	}{
		{"unavailable", "grant: the store is unavailable", &mesh.UnavailableError{Op: "read acme", Err: errors.New(secret)}},
		{"unknown", "grant: the read failed (the server's log says why)", errors.New(secret)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			var log bytes.Buffer
			a := f.authenticator(nil)
			a.Logger = slog.New(slog.NewTextHandler(&log, nil))
			srv := server(t, Middleware(a, instanceEcho))
			f.store.fail(GrantPath("acme"), c.err)
			got := get(t, srv, bearer(f.key))
			assert.Equal(t, http.StatusServiceUnavailable, got.status)
			assert.Equal(t, c.reason, got.reason)
			for _, s := range []string{"regadmin", "10.20.30.40", "database="} {
				assert.NotContains(t, got.body, s)
			}
			assert.Contains(t, log.String(), "regadmin", "the log keeps the detail")
		})
	}
}

func TestARequestThatEndsBeforeItsKeyIsCheckedIs503(t *testing.T) {
	f := newFixture(t)
	f.store.stall(InstancePath("acme"))
	cancels := make(chan context.CancelFunc, 1)
	endable := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// As an outer deadline would: the test decides when it passes.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			cancels <- cancel
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	pending := getAsync(t, server(t, endable(Middleware(f.authenticator(nil), instanceEcho))), bearer(f.key))
	f.store.waitEntered(t, InstancePath("acme"))
	require.Equal(t, 1, f.clk.Pending(), "the request waits on the instance leg")
	(<-cancels)()

	a := testkit.Receive(t, pending, "the middleware's answer")
	assert.Equal(t, http.StatusServiceUnavailable, a.status, "no virtual time passed: the request context ended the wait")
	assert.Contains(t, a.reason, "the request ended before the key could be checked")
	assert.Zero(t, f.clk.Pending(), "the abandoned leg was unsubscribed and its bound disarmed")
}

// A request the middleware refuses (no key, a wrong one) that declares a
// body and sends none is answered at once on a connection then closed:
// net/http would otherwise read the body before answering, holding the
// answer until the server's ReadTimeout (none here, as a zero http.Server
// has none). Negative control (run): without CloseUnread, both rows got no
// answer within the 15 s ceiling.
func TestARefusedRequestDeclaringABodyItNeverSendsIsAnsweredAtOnce(t *testing.T) {
	f := newFixture(t)
	srv := server(t, Middleware(f.authenticator(nil), instanceEcho))
	for _, c := range []struct{ name, auth, framing string }{
		{"no key", "", "Content-Length: 100\r\n"},
		{"a wrong key", "Authorization: Bearer mwi_" + strings.Repeat("A", 43) + "\r\n", "Transfer-Encoding: chunked\r\n"},
	} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: svc.test\r\n"+c.auth+c.framing+"\r\n")
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(testkit.Bound))) // a ceiling, not a delay
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if !assert.NoError(t, err, "%s: answered without waiting for the body", c.name) {
			continue
		}
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, c.name)
		assert.True(t, resp.Close, "%s: the answer says the connection closes", c.name)
	}
}
