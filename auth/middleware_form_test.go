package auth

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chain applies middlewares outermost first, as chain helpers of routers do:
// it compiles only with the func(http.Handler) http.Handler form.
func chain(h http.Handler, mws ...func(http.Handler) http.Handler) http.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

func TestRequireComposesInAMiddlewareChainAndGuardsAsMiddlewareDoes(t *testing.T) {
	f := newFixture(t)
	tagged := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Outer", "ran")
			next.ServeHTTP(w, r)
		})
	}
	srv := server(t, chain(instanceEcho, tagged, Require(f.authenticator(nil))))

	ok := get(t, srv, bearer(f.key))
	assert.Equal(t, http.StatusOK, ok.status)
	assert.Equal(t, "acme", ok.body, "the Result reached the handler")
	// Negative control: without a key the chained guard refuses, as
	// Middleware does; a chain without Require would answer 500 (no Result).
	assert.Equal(t, http.StatusUnauthorized, get(t, srv, "").status)
	assert.Equal(t, http.StatusInternalServerError, get(t, server(t, chain(instanceEcho, tagged)), bearer(f.key)).status)
}

// Before: Middleware(nil, h) built a handler that dereferenced nil on the
// first request with a key, and a zero Authenticator did the same inside
// its first leg; nothing named what was missing.
func TestAGuardWiredWithANilAuthenticatorHandlerOrMeshPanicsAtTheCallNamingIt(t *testing.T) {
	f := newFixture(t)
	good := f.authenticator(nil)
	cases := []struct {
		name  string
		call  func()
		names string
	}{
		{"nil authenticator", func() { Middleware(nil, instanceEcho) }, "*auth.Authenticator is nil"},
		{"nil handler", func() { Middleware(good, nil) }, "next http.Handler is nil"},
		{"zero authenticator", func() { Middleware(&Authenticator{}, instanceEcho) }, "Mesh is nil"},
		{"Require, nil authenticator", func() { Require(nil) }, "auth.Require: the *auth.Authenticator is nil"},
		{"Require, zero authenticator", func() { Require(&Authenticator{}) }, "Mesh is nil"},
		{"Require, nil handler", func() { Require(good)(nil) }, "next http.Handler is nil"},
		{"Authenticate on a zero authenticator", func() { (&Authenticator{}).Authenticate(bearer(f.key)) }, "Authenticator.Mesh is nil"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.PanicsWithValue(t, panicText(t, c.call), c.call)
			assert.Contains(t, panicText(t, c.call), c.names)
		})
	}
	// Negative control: the same calls with every argument set do not panic.
	assert.NotPanics(t, func() { Middleware(good, instanceEcho); Require(good)(instanceEcho) })
}

func panicText(t *testing.T, f func()) (text string) {
	t.Helper()
	defer func() {
		r := recover()
		require.NotNil(t, r, "no panic")
		s, ok := r.(string)
		require.True(t, ok, "panic value %T %v", r, r)
		text = s
	}()
	f()
	return ""
}

// Before: the body said "a dependency it must consult did not answer in
// time" whatever the cause, also for a closed store.
func TestThe503OfAClosedStoreNamesTheClosedStoreNotATimeout(t *testing.T) {
	f := newFixture(t)
	srv := server(t, Middleware(f.authenticator(nil), instanceEcho))
	require.NoError(t, f.store.Close())
	a := get(t, srv, bearer(f.key))
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	var body struct{ Error string }
	require.NoError(t, jsonUnmarshal(a.body, &body))
	assert.Contains(t, body.Error, "the store is unavailable")
	assert.NotContains(t, body.Error, "in time")
	assert.Contains(t, body.Error, "NOT a statement about your key")
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
