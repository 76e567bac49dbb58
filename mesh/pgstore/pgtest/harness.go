package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// Harness is a test binary's PostgreSQL server, shared by its tests (see the
// package documentation for the TestMain that declares one). The zero value
// decides from the environment (see Decide) and starts the server the first
// time a test asks for it, so a run whose tests need no database pays
// nothing; Wrap ties the server's lifetime to the test binary's.
type Harness struct {
	// Config supplies budgets, logger and temporary directory for a server
	// the harness starts; where the server comes from is decided from the
	// environment.
	Config Config

	decide func() Plan // nil: decide from os.Getenv and FindBinaries

	once   sync.Once
	plan   Plan
	server *Server
	err    error
}

// TestingM is what testing.M and goleak.VerifyTestMain agree on.
type TestingM interface{ Run() int }

// Wrap returns m with the server's lifetime around it: Run runs the tests,
// then stops the server (if one was started) and removes its directory, even
// when m.Run panics. Compose it with goleak: goleak.VerifyTestMain(h.Wrap(m)).
func (h *Harness) Wrap(m TestingM) TestingM { return wrapped{h: h, m: m} }

// Main is TestMain in one line: goleak.VerifyTestMain(h.Wrap(m), opts...).
func Main(m *testing.M, h *Harness, opts ...goleak.Option) {
	goleak.VerifyTestMain(h.Wrap(m), opts...)
}

type wrapped struct {
	h *Harness
	m TestingM
}

func (w wrapped) Run() (code int) {
	defer func() {
		if err := w.h.stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}()
	return w.m.Run()
}

// Server returns the shared server, starting it on first use. When there is
// none, it skips t with the reason, or fails t if MESHRX_REQUIRE_PG=1 or the
// server could not start.
func (h *Harness) Server(t testing.TB) *Server {
	t.Helper()
	// Concurrent first callers wait here for one start, which is bounded by
	// the start budget.
	h.once.Do(h.start)
	switch {
	case h.server != nil:
		return h.server
	case h.plan.Mode == ModeSkip:
		t.Skip(h.plan.Reason)
	case h.plan.Mode == ModeFail:
		t.Fatal(h.plan.Reason)
	default:
		t.Fatalf("pgtest: starting the %s PostgreSQL server: %v", h.plan.Mode, h.err)
	}
	return nil
}

// Database creates a fresh database for t on the shared server, drops it
// when t ends, and returns its URL.
func (h *Harness) Database(t testing.TB) string {
	t.Helper()
	s := h.Server(t)
	dbURL, err := s.CreateDatabase(t.Context(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// t.Context is already done here; the drop has its own op budget.
		if err := s.DropDatabase(context.Background(), dbURL); err != nil {
			t.Error(err)
		}
	})
	return dbURL
}

func (h *Harness) start() {
	if h.decide != nil {
		h.plan = h.decide()
	} else {
		bins, err := FindBinaries(os.Getenv("PATH"), DebianRoot)
		h.plan = Decide(os.Getenv, bins, err)
	}
	cfg := h.Config
	switch h.plan.Mode {
	case ModeExternal:
		cfg.URL = h.plan.URL
	case ModeLocal:
		cfg.URL, cfg.Binaries = "", h.plan.Binaries
	default:
		return
	}
	h.server, h.err = cfg.Start(context.Background())
}

// stop stops the server if this harness started one. It runs after all tests
// have returned, so it does not race with start.
func (h *Harness) stop() error {
	h.once.Do(func() {}) // no test asked for a server: none will start now
	if h.server == nil {
		return nil
	}
	return h.server.Stop()
}
