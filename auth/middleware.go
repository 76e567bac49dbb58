package auth

import (
	"errors"
	"net/http"

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
func Middleware(a *Authenticator, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := rx.First(r.Context(), a.Authenticate(r.Header.Get("Authorization")))
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
