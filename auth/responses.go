package auth

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	httpanswer "github.com/meshrx/meshrx/internal/answer"
)

const (
	unauthenticatedMessage = "A registered instance key is required (Authorization: Bearer mwi_… or Basic with the key as password)."
	// unavailableMessage follows the reason, which names what could not be
	// read and why (a bound that tripped, a store that is closed or down).
	unavailableMessage = "This is NOT a statement about your key or your grant. Retry after the number of seconds in Retry-After."
)

// WriteUnauthenticated answers 401 for a request that carries no usable
// instance key. It is decided without reading storage, so its speed says
// nothing about the health of the authenticated path.
func WriteUnauthenticated(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", "Bearer")
	writeJSON(w, http.StatusUnauthorized, struct {
		Error string `json:"error"`
	}{unauthenticatedMessage})
}

// WriteUnavailable answers 503 with Retry-After for a request whose key or
// grant could not be checked, naming what could not be read in reason. It
// must be used instead of 401 whenever the answer is "could not find out".
// The body's waitingOn lists the stage reason starts with, as every other
// 503 of the registry does. retryAfter is rounded up to whole seconds; zero
// or less means the module's one default (5s).
func WriteUnavailable(w http.ResponseWriter, reason string, retryAfter time.Duration) {
	httpanswer.SetRetryAfter(w.Header(), retryAfter)
	writeJSON(w, http.StatusServiceUnavailable, struct {
		Error     string   `json:"error"`
		Reason    string   `json:"reason"`
		WaitingOn []string `json:"waitingOn"`
	}{unavailableError(reason), reason, []string{waitedOn(reason)}})
}

// unavailableError is the 503's message: the cause as reason names it (a
// fixed "did not answer in time" was wrong when the store was closed).
func unavailableError(reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "a dependency it must consult could not answer"
	}
	return "The server could not find out whether this request is authorised (" + reason + "). " + unavailableMessage
}

// waitedOn is the stage a reason names first: every caller writes its
// reason as "stage: detail", as the registry's refusals list their stages
// in waitingOn.
func waitedOn(reason string) string {
	stage, _, _ := strings.Cut(reason, ": ")
	return strings.TrimSpace(stage)
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	// Neither answer may be replayed by a cache: both describe this moment.
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	// The bodies are fixed structs of strings; encoding cannot fail, and a
	// write error means the client has gone, which nobody can be told.
	_ = json.NewEncoder(w).Encode(body)
}
