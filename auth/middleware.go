package auth

import (
	"errors"
	"net/http"

	httpanswer "github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/rx"
)

// Middleware guards next with a: a request without a usable key gets 401
// (WriteUnauthenticated), one whose key could not be checked gets 503 with
// Retry-After (WriteUnavailable, naming the leg), and a resolved one reaches
// next with its Result in the request context (FromContext).
//
// The wait is bounded twice: each leg by the Authenticator's own budgets, and
// the whole by the request context. A request context that ends first is
// also answered 503: not knowing is never a 401.
//
// Middleware panics, naming the argument, when a or next is nil or a has no
// Mesh: a guard wired wrongly fails where it is wired, not on the first
// request. Require is the same guard in the func(http.Handler) http.Handler
// form of middleware chains.
func Middleware(a *Authenticator, next http.Handler) http.Handler {
	return middleware("auth.Middleware", a, next)
}

// Require returns the guard of Middleware in the form middleware chains
// compose: auth.Require(a)(next) is auth.Middleware(a, next). It panics at
// once when a is nil or has no Mesh, and the returned function panics when
// given a nil handler.
func Require(a *Authenticator) func(http.Handler) http.Handler {
	mustUsable("auth.Require", a)
	return func(next http.Handler) http.Handler { return middleware("auth.Require(a)", a, next) }
}

// mustUsable panics, naming the call, when a cannot check a key.
func mustUsable(call string, a *Authenticator) {
	switch {
	case a == nil:
		panic(call + ": the *auth.Authenticator is nil")
	case a.Mesh == nil:
		panic(call + ": the Authenticator's Mesh is nil (a zero Authenticator cannot check keys; set Mesh to the store holding the instances)")
	}
}

func middleware(call string, a *Authenticator, next http.Handler) http.Handler {
	mustUsable(call, a)
	if next == nil {
		panic(call + ": the next http.Handler is nil")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := rx.First(r.Context(), a.Authenticate(r.Header.Get("Authorization")))
		if err != nil || !res.Authenticated() {
			// Refused unread: a body declared and never sent must not
			// hold the answer (net/http reads it first to keep the
			// connection) until the server's ReadTimeout, if it has one.
			httpanswer.CloseUnread(w, r)
		}
		switch {
		case errors.Is(err, rx.ErrEmpty):
			// Authenticate always yields one Result; this would be a bug, and
			// still not a statement about the key.
			WriteUnavailable(w, "authentication: no outcome", 0)
		case err != nil:
			a.logger().Warn("auth: the request ended before its instance key could be checked", "error", err)
			WriteUnavailable(w, "authentication: the request ended before the key could be checked", 0) // the detail is in the log
		case res.Unavailable != "":
			WriteUnavailable(w, res.Unavailable, 0)
		case !res.Authenticated():
			WriteUnauthenticated(w)
		default:
			next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), res)))
		}
	})
}
