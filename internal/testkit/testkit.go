// Package testkit holds the helpers this module's tests share: a receive
// with a named bound and a slog handler that keeps what it is given.
//
// It is imported by tests only.
package testkit

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Bound is how long a test waits for something that must happen. It is a
// ceiling for a stuck test, never a delay a passing test spends, so it is
// generous: at 2s, waits that a passing test meets in microseconds tripped
// on a 2-core machine running the whole suite beside other work.
const Bound = 15 * time.Second

// Receive waits at most Bound for a value on ch and fails the test, naming
// what it waited for, if none comes.
func Receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(Bound)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		require.FailNowf(t, "bounded wait tripped", "%s did not happen within %s", what, Bound)
		panic("unreachable")
	}
}

// Record is one captured slog record, its attributes flattened with
// dotted group prefixes ("group.key").
type Record struct {
	Level   slog.Level
	Message string
	Attrs   map[string]slog.Value
}

// Logs keeps what a capturing logger received.
type Logs struct {
	mu      sync.Mutex
	records []Record
	// Added receives each record as it is logged, while it has room (64);
	// a test that waits for a line reads it.
	Added chan Record
}

// CaptureLogs returns a logger whose records the returned Logs keeps.
func CaptureLogs() (*Logs, *slog.Logger) {
	s := &Logs{Added: make(chan Record, 64)}
	return s, slog.New(&captureHandler{store: s})
}

// All returns every record kept, in order.
func (s *Logs) All() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.records...)
}

// At returns the records logged at level exactly.
func (s *Logs) At(level slog.Level) []Record {
	var out []Record
	for _, r := range s.All() {
		if r.Level == level {
			out = append(out, r)
		}
	}
	return out
}

// Matching returns the records logged at level whose message contains part.
func (s *Logs) Matching(level slog.Level, part string) []Record {
	var out []Record
	for _, r := range s.At(level) {
		if strings.Contains(r.Message, part) {
			out = append(out, r)
		}
	}
	return out
}

// AtOrAbove returns the records logged at level or above.
func (s *Logs) AtOrAbove(level slog.Level) []Record {
	var out []Record
	for _, r := range s.All() {
		if r.Level >= level {
			out = append(out, r)
		}
	}
	return out
}

// Messages returns the messages of the records logged at level or above.
func (s *Logs) Messages(level slog.Level) []string {
	var out []string
	for _, r := range s.AtOrAbove(level) {
		out = append(out, r.Message)
	}
	return out
}

type captureHandler struct {
	store  *Logs
	prefix string
	preset map[string]slog.Value
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	rec := Record{Level: r.Level, Message: r.Message, Attrs: map[string]slog.Value{}}
	for k, v := range h.preset {
		rec.Attrs[k] = v
	}
	r.Attrs(func(a slog.Attr) bool {
		flattenAttr(h.prefix, a, rec.Attrs)
		return true
	})
	h.store.mu.Lock()
	h.store.records = append(h.store.records, rec)
	h.store.mu.Unlock()
	select {
	case h.store.Added <- rec:
	default:
	}
	return nil
}

func (h *captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	preset := map[string]slog.Value{}
	for k, v := range h.preset {
		preset[k] = v
	}
	for _, a := range as {
		flattenAttr(h.prefix, a, preset)
	}
	return &captureHandler{store: h.store, prefix: h.prefix, preset: preset}
}

func (h *captureHandler) WithGroup(name string) slog.Handler {
	return &captureHandler{store: h.store, prefix: h.prefix + name + ".", preset: h.preset}
}

func flattenAttr(prefix string, a slog.Attr, into map[string]slog.Value) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			flattenAttr(prefix+a.Key+".", g, into)
		}
		return
	}
	into[prefix+a.Key] = v
}

// Serve runs h on a real HTTP server that is closed when the test ends.
func Serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// RandomBytes returns n bytes that do not compress.
func RandomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
