package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

func TestTheEventStreamShowsTheSeededBellAndASentNotificationArrivesLive(t *testing.T) {
	a := startRun(t, config{addr: "127.0.0.1:0"})
	c := a.as(t, "alice")
	alice := openStream(t, c, a.url+"/events")
	require.Equal(t, http.StatusOK, alice.status)
	alice.next(t, "hello", func(string) bool { return true })
	first := decodeBell(t, alice.next(t, "bell", has("Review requested")).data)
	assert.NotNil(t, first.find("Welcome to meshrx"))
	assert.Nil(t, first.find("Nightly backup finished"), "alice is not a global admin")

	status, body := post(t, c, a.url+"/send", url.Values{"to": {"alice"}, "title": {"Lunch?"}, "type": {"ChatReady"}})
	require.Equal(t, http.StatusOK, status, "body: %v", body)
	got := decodeBell(t, alice.next(t, "bell", has("Lunch?")).data)
	assert.Equal(t, first.Unread+1, got.Unread)
	assert.Equal(t, first.count()+1, got.count())
	assert.True(t, got.find("Lunch?").Own)

	// bob's stream does not get alice's notification: after a send to bob
	// (a point both streams have passed), bob's bell still lacks it.
	bob := openStream(t, a.as(t, "bob"), a.url+"/events")
	status, _ = post(t, c, a.url+"/send", url.Values{"to": {"bob"}, "title": {"Coffee?"}})
	require.Equal(t, http.StatusOK, status)
	bobs := decodeBell(t, bob.next(t, "bell", has("Coffee?")).data)
	assert.Nil(t, bobs.find("Lunch?"))

	// ops, the global admin, also sees the Admin notifications.
	ops := openStream(t, a.as(t, "ops"), a.url+"/events")
	opsBell := decodeBell(t, ops.next(t, "bell", has("Nightly backup finished")).data)
	assert.False(t, opsBell.find("Nightly backup finished").Own, "an Admin notification is not ops's own to mark")
}

func TestMarkingReadOverHTTPLowersTheUnreadCount(t *testing.T) {
	a := startRun(t, config{addr: "127.0.0.1:0"})
	c := a.as(t, "alice")
	alice := openStream(t, c, a.url+"/events")
	before := decodeBell(t, alice.next(t, "bell", has("Review requested")).data)
	item := before.find("Review requested")
	require.False(t, item.IsRead)

	res, err := c.PostForm(a.url+"/read", url.Values{"id": {item.ID}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNoContent, res.StatusCode)
	after := decodeBell(t, alice.next(t, "bell", func(d string) bool {
		return decodeBell(t, d).Unread == before.Unread-1
	}).data)
	assert.True(t, after.find("Review requested").IsRead)

	status, body := post(t, a.as(t, "bob"), a.url+"/read", url.Values{"id": {item.ID}})
	assert.Equal(t, http.StatusNotFound, status, "bob cannot mark alice's notification: %v", body)
}

func TestBadInputIsAnsweredWithAClearErrorAndChangesNothing(t *testing.T) {
	a := startRun(t, config{addr: "127.0.0.1:0"})
	c := a.as(t, "alice")
	for _, viewer := range []string{"_Access", "alice/x", "bob", "\u212Alice"} {
		res, err := c.Get(a.url + "/events?viewer=" + url.QueryEscape(viewer))
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assert.Equal(t, http.StatusForbidden, res.StatusCode, "viewer %q", viewer)
		assert.Contains(t, string(body), "sees only their own bell")
	}
	for _, form := range []url.Values{
		{"to": {"alice"}, "title": {"x"}, "type": {"Urgent"}},
		{"to": {"alice"}, "title": {"   "}},
		{"to": {"mallory"}, "title": {"x"}},
		{"to": {""}, "title": {"x"}},
	} {
		status, body := post(t, c, a.url+"/send", form)
		assert.Equal(t, http.StatusBadRequest, status, "form %v", form)
		assert.Contains(t, body["error"], "invalid")
	}
	status, _ := post(t, c, a.url+"/read", url.Values{"id": {"no-such-id"}})
	assert.Equal(t, http.StatusNotFound, status)

	alice := openStream(t, c, a.url+"/events")
	v := decodeBell(t, alice.next(t, "bell", has("Review requested")).data)
	assert.Nil(t, v.find("x"), "a refused send wrote nothing")
}

func TestShutdownEndsOpenEventStreamsAndLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a := startRun(t, config{addr: "127.0.0.1:0"})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	streams := []*stream{
		openStream(t, &http.Client{Transport: bearer{token: a.token(t, "alice"), next: tr}}, a.url+"/events"),
		openStream(t, &http.Client{Transport: bearer{token: a.token(t, "ops"), next: tr}}, a.url+"/events"),
	}
	for _, s := range streams {
		s.next(t, "bell", func(string) bool { return true })
	}
	require.NoError(t, a.stop(), "a signal ends the run cleanly")
	for _, s := range streams {
		s.ended(t) // the server ended it; the client did not have to
	}
	// Negative control: the server is gone.
	_, err := c.Get(a.url + "/")
	assert.Error(t, err)
}

func TestThePgFlagServesFromPostgreSQLAndARestartDoesNotDoubleTheDemo(t *testing.T) {
	db := pg.Database(t)
	first := startRun(t, config{addr: "127.0.0.1:0", pg: db})
	status, _ := post(t, first.as(t, "bob"), first.url+"/send", url.Values{"to": {"alice"}, "title": {"stored in PostgreSQL"}})
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, first.stop())

	second := startRun(t, config{addr: "127.0.0.1:0", pg: db})
	alice := openStream(t, second.as(t, "alice"), second.url+"/events")
	v := decodeBell(t, alice.next(t, "bell", has("stored in PostgreSQL")).data)
	// Two demo notifications for alice (seeded twice, with identities) and
	// the one sent: without identities the restart would show five.
	assert.Equal(t, 3, v.count())
}

func TestThePgFlagReportsAnUnreachableDatabase(t *testing.T) {
	err := run(t.Context(), config{addr: "127.0.0.1:0", pg: "postgres://nobody@127.0.0.1:1/none?connect_timeout=5"},
		io.Discard, discard())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "opening PostgreSQL")
}

func TestFlagsDefaultToTheLocalAddressAndRefuseStrayArguments(t *testing.T) {
	cfg, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:8081", cfg.addr)
	assert.Empty(t, cfg.pg)
	assert.False(t, cfg.measure.enabled)

	cfg, err = parseFlags([]string{"-addr", ":0", "-pg", "postgres://x"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, ":0", cfg.addr)
	assert.Equal(t, "postgres://x", cfg.pg)

	_, err = parseFlags([]string{"stray"}, io.Discard)
	assert.ErrorContains(t, err, "unexpected arguments")
	_, err = parseFlags([]string{"-h"}, io.Discard)
	assert.True(t, errors.Is(err, flag.ErrHelp))

	var out bytes.Buffer
	err = measure(context.Background(), config{measure: measureConfig{enabled: true}}, &out, discard())
	assert.ErrorContains(t, err, "-measure needs -pg")
	assert.Empty(t, strings.TrimSpace(out.String()))
}

func TestAListenerOnEveryInterfaceIsPrintedAsAnAddressABrowserOpens(t *testing.T) {
	assert.Equal(t, "localhost:8081", displayAddr(&net.TCPAddr{IP: net.IPv6unspecified, Port: 8081}))
	assert.Equal(t, "localhost:8081", displayAddr(&net.TCPAddr{IP: net.IPv4zero, Port: 8081}))
	// A specific address is printed as it is.
	assert.Equal(t, "127.0.0.1:8081", displayAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8081}))
}

// gatedStore holds each Put until gate is closed (or its context ends, as
// a real store's write does), telling entered when one starts.
type gatedStore struct {
	mesh.Store
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedStore) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return mesh.Node{}, ctx.Err()
	}
	return g.Store.Put(ctx, n)
}

// closeSignal tells closed when the listener is closed: Shutdown has begun.
type closeSignal struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
}

func (l *closeSignal) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// TestASendUnderWayWhenShutdownStartsFinishes: a /send whose write is
// under way when the bell is told to stop is given the shutdown budget to
// finish, as serve promises, and is delivered. Before, every request's
// context was ended as shutdown began (a BaseContext left from when event
// streams were handlers), so the send failed with a 500. Negative
// control (run): with that BaseContext back the send is a 500 and nothing
// is delivered.
func TestASendUnderWayWhenShutdownStartsFinishes(t *testing.T) {
	store, err := memstore.New(memstore.Options{})
	require.NoError(t, err)
	defer store.Close()
	svc := &notifications.Service{Mesh: store, Clock: clock.New(), Admins: demoAdmins{demoAdmin: true}}
	gated := &gatedStore{Store: store, entered: make(chan struct{}, 1), gate: make(chan struct{})}
	svc.Mesh = gated
	accts, err := newAccounts(demoUsers)
	require.NoError(t, err)
	srv := newServer(svc, accts, discard())
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := &closeSignal{Listener: inner, closed: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, srv, discard()) }()

	alice := &http.Client{Transport: bearer{token: accts.tokens["alice"], next: client(t).Transport}, Timeout: bound}
	type answer struct {
		status int
		body   map[string]any
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := alice.PostForm("http://"+inner.Addr().String()+"/send", url.Values{"to": {"bob"}, "title": {"sent as it stops"}})
		if err != nil {
			answered <- answer{status: -1, body: map[string]any{"err": err.Error()}}
			return
		}
		defer res.Body.Close()
		a := answer{status: res.StatusCode, body: map[string]any{}}
		_ = json.NewDecoder(res.Body).Decode(&a.body)
		answered <- a
	}()
	select {
	case <-gated.entered:
	case <-time.After(bound):
		require.FailNow(t, "the send's write did not start within the bound")
	}
	stop()
	select {
	case <-ln.closed:
	case <-time.After(bound):
		require.FailNow(t, "shutdown did not begin within the bound")
	}
	close(gated.gate)
	var a answer
	select {
	case a = <-answered:
	case <-time.After(bound):
		require.FailNow(t, "the send was not answered within the bound")
	}
	assert.Equal(t, http.StatusOK, a.status, "%v", a.body)
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-time.After(bound):
		require.FailNow(t, "serve did not return within the bound")
	}
	delivered, _ := a.body["delivered"].([]any)
	require.Len(t, delivered, 1)
	path, _ := delivered[0].(string)
	node, err := rx.First(t.Context(), store.Get(path))
	require.NoError(t, err)
	assert.Contains(t, string(node.Content), "sent as it stops")
}

// TestASendWhoseTextNoStoreHoldsIsABadRequestAndReachesNoOne: a title,
// message, icon or target that is not UTF-8 or holds a NUL is the sender's
// mistake: a 400 naming the field, and nothing is written, to the recipient
// or to Admin. Before, the store's refusal was taken for the recipient's
// partition refusing it: Create delivered it to Admin instead (which
// refused it too) and the send answered 500. Negative control, run by hand:
// without Create's check, each send answered 500 "send: failed".
func TestASendWhoseTextNoStoreHoldsIsABadRequestAndReachesNoOne(t *testing.T) {
	a := startRun(t, config{addr: "127.0.0.1:0"})
	for _, f := range []struct{ field, value string }{
		{"title", "\xc0\x80"}, {"title", "a\x00b"}, {"message", "a\x00b"}, {"message", "\xff"},
		{"icon", "\x00"}, {"target", "acme/\x00"},
	} {
		form := url.Values{"to": {"alice"}, "title": {"refused"}}
		form.Set(f.field, f.value)
		status, body := post(t, a.as(t, "ops"), a.url+"/send", form)
		assert.Equal(t, http.StatusBadRequest, status, "%s %q: %v", f.field, f.value, body)
		assert.Contains(t, body["error"], "invalid", "%s %q", f.field, f.value)
	}
	for _, viewer := range []string{"alice", "ops"} { // ops sees the Admin notifications
		s := openStream(t, a.as(t, viewer), a.url+"/events")
		v := decodeBell(t, s.next(t, "bell", func(string) bool { return true }).data)
		assert.Nil(t, v.find("refused"), "%s's bell", viewer)
		assert.Nil(t, v.find("\xc0\x80"), "%s's bell", viewer)
	}
	// Control: the same send with plain text is delivered.
	status, body := post(t, a.as(t, "ops"), a.url+"/send", url.Values{"to": {"alice"}, "title": {"fine"}, "message": {"plain"}})
	assert.Equal(t, http.StatusOK, status, "%v", body)
}

// TestADatabaseOutageIsAnswered503AndAnOpenStreamCatchesUpAfterIt: while
// the bell's PostgreSQL database refuses connections, a mark-read and a
// send answer 503 with Retry-After (never a 500, never a success), a
// stream opened then says "failure" and ends (its EventSource retries), and
// once the database is back a notification sent reaches the stream that
// stayed open through the outage. (Found sound in review; kept as its
// guard.)
func TestADatabaseOutageIsAnswered503AndAnOpenStreamCatchesUpAfterIt(t *testing.T) {
	db := pg.Database(t)
	a := startRun(t, config{addr: "127.0.0.1:0", pg: db})
	alice := openStream(t, a.as(t, "alice"), a.url+"/events")
	alice.next(t, "bell", has("Review requested"))

	cfg, err := pgx.ParseConfig(db)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	admin, err := pgx.Connect(ctx, pg.Server(t).URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	name := pgx.Identifier{cfg.Database}.Sanitize()
	_, err = admin.Exec(ctx, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS false`)
	require.NoError(t, err)
	back := func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		_, err := admin.Exec(ctx, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS true`)
		assert.NoError(t, err)
	}
	t.Cleanup(back) // before the connection closes; a second ALTER is harmless
	_, err = admin.Exec(ctx, `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = $1`, cfg.Database)
	require.NoError(t, err)

	for _, r := range []struct {
		path string
		form url.Values
	}{{"/read", url.Values{"id": {"x"}}}, {"/send", url.Values{"to": {"alice"}, "title": {"during the outage"}}}} {
		res, body := do(t, a.as(t, "bob"), http.MethodPost, a.url+r.path, r.form, nil)
		assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "%s: %s", r.path, body)
		assert.NotEmpty(t, res.Header.Get("Retry-After"), "%s", r.path)
	}
	during := openStream(t, a.as(t, "alice"), a.url+"/events")
	assert.Equal(t, http.StatusOK, during.status)
	during.next(t, "failure", func(string) bool { return true })
	during.ended(t)

	back()
	status, body := post(t, a.as(t, "bob"), a.url+"/send", url.Values{"to": {"alice"}, "title": {"after the outage"}})
	require.Equal(t, http.StatusOK, status, "%v", body)
	v := decodeBell(t, alice.next(t, "bell", has("after the outage")).data)
	assert.Nil(t, v.find("during the outage"), "the refused send wrote nothing")
}
