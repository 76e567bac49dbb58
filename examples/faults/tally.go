package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// counts are the HTTP invariants of one phase of the run.
type counts struct {
	requests          int64
	wrong401          int64 // a valid key answered 401
	retryAfterMissing int64 // a 503 without Retry-After or without waitingOn
	unavailable       int64 // a 503 (with or without Retry-After): "could not find out"
	other5xx          int64 // a 5xx that is not 503
	unreachable       int64 // no HTTP answer (a killed replica's refused connection)
	badDownloads      int64 // a download whose bytes do not hash to the index's sha256
	maxUnavailable    time.Duration
}

// phase is one stretch of the run: the warm-up, a fault with its quiet
// period, or the final verification.
type phase struct {
	name     string
	counts   counts
	recovery time.Duration // fault end → both replicas answer the index 200; -1: never
	feedBack time.Duration // fault end → both change feeds connected
	note     string
}

// tally counts what the load sees, by phase. Safe for concurrent use.
type tally struct {
	out io.Writer // violations are reported here as they happen (a few each)

	mu       sync.Mutex
	phases   []*phase
	total    counts
	reported map[string]int
}

func newTally(out io.Writer) *tally {
	return &tally{out: out, phases: []*phase{{name: "warm-up"}}, reported: map[string]int{}}
}

func (t *tally) begin(name string) *phase {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := &phase{name: name}
	t.phases = append(t.phases, p)
	return p
}

// current returns the name of the phase running now.
func (t *tally) current() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.phases[len(t.phases)-1].name
}

func (t *tally) add(f func(c *counts)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(&t.total)
	f(&t.phases[len(t.phases)-1].counts)
}

// violation prints the first few violations of each kind as they happen.
func (t *tally) violation(kind, format string, args ...any) {
	t.mu.Lock()
	n := t.reported[kind]
	t.reported[kind] = n + 1
	ph := t.phases[len(t.phases)-1].name
	t.mu.Unlock()
	if n < 5 {
		fmt.Fprintf(t.out, "violation %s during %q: %s\n", kind, ph, fmt.Sprintf(format, args...))
	}
}

// classify counts one answer to a request made with a valid key (or the
// publish token) and reports whether it was an answer the consumer can use
// (200, 201, 304). err is the transport's error.
func (t *tally) classify(what string, resp *http.Response, body []byte, err error) bool {
	t.add(func(c *counts) { c.requests++ })
	if err != nil {
		t.add(func(c *counts) { c.unreachable++ })
		return false
	}
	switch code := resp.StatusCode; {
	case code == http.StatusOK, code == http.StatusCreated, code == http.StatusNotModified:
		return true
	case code == http.StatusUnauthorized:
		t.add(func(c *counts) { c.wrong401++ })
		t.violation("wrong_401", "%s: 401 %s", what, clip(body))
	case code == http.StatusServiceUnavailable:
		t.add(func(c *counts) { c.unavailable++ })
		if resp.Header.Get("Retry-After") == "" || !hasWaitingOn(body) {
			t.add(func(c *counts) { c.retryAfterMissing++ })
			t.violation("retry_after_missing", "%s: 503 Retry-After=%q %s", what, resp.Header.Get("Retry-After"), clip(body))
		}
	case code >= 500:
		t.add(func(c *counts) { c.other5xx++ })
		t.violation("other_5xx", "%s: %d %s", what, code, clip(body))
	}
	return false
}

// hasWaitingOn reports whether a refusal's body names what it waited on.
func hasWaitingOn(body []byte) bool {
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return false
	}
	w, ok := doc["waitingOn"]
	return ok && len(w) > 0 && w[0] == '['
}

func clip(b []byte) string {
	const max = 300
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// unavailability tracks one poller's stretch without a usable answer.
type unavailability struct {
	mu        sync.Mutex
	downSince time.Time // start of the first failed poll since the last usable one
}

// observe records a poll started at start, finished at end.
func (u *unavailability) observe(t *tally, ok bool, start, end time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case !ok && u.downSince.IsZero():
		u.downSince = start
	case ok && !u.downSince.IsZero() && start.After(u.downSince):
		gap := end.Sub(u.downSince)
		u.downSince = time.Time{}
		t.add(func(c *counts) { c.maxUnavailable = max(c.maxUnavailable, gap) })
	}
}
