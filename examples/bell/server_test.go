package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
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
