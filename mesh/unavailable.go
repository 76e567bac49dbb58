package mesh

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/meshrx/meshrx/rx"
)

// ProviderStalledError ends a query whose providers did not all send their
// Initial frame within the initial budget. It is terminal and an availability
// failure: retry later (HTTP 503 + Retry-After), and an access decision that
// depends on it fails closed. It is deliberately not an rx.TimeoutError: the
// read did not time out a single wait, a provider went silent.
type ProviderStalledError struct {
	Providers []string      // the providers still silent
	Budget    time.Duration // the initial budget they exceeded
	Query     string        // the query, canonical form
}

func (e *ProviderStalledError) Error() string {
	return fmt.Sprintf("mesh: query %s: provider(s) %s sent no initial result within %s",
		quoteClipped(e.Query, 120), strings.Join(e.Providers, ", "), e.Budget)
}

// UnavailableError is a store that could not answer: the connection failed,
// the database refused, a dependency is down. It says what was being done.
type UnavailableError struct {
	Op  string // what was being done, e.g. "read acme/Docs"
	Err error
}

func (e *UnavailableError) Error() string { return "mesh: " + e.Op + ": unavailable: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// ErrOutcomeUnknown is wrapped by the error of a write that reached the
// store but whose answer did not come back (its budget ran out, its
// connection broke): it may have been applied, or not. Such an error is
// also a *UnavailableError. Read the node back, or repeat the write where
// repeating is harmless (a Put of the same node, a Delete); a repeated
// PutIfVersion that had been applied fails with *VersionConflictError. A
// write that failed before it was sent is never an ErrOutcomeUnknown.
var ErrOutcomeUnknown = errors.New("mesh: the write's outcome is unknown: it may have been applied")

// IsUnavailable reports whether err means "could not find out" rather than a
// fact: a stalled provider, a timed-out wait, or an unavailable store.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var stalled *ProviderStalledError
	var unavailable *UnavailableError
	return errors.As(err, &stalled) || errors.As(err, &unavailable) || errors.Is(err, rx.ErrTimeout)
}
