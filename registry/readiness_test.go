package registry

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// readyAnswer decodes a /readyz answer.
func readyAnswer(t *testing.T, got reply) readiness {
	t.Helper()
	var r readiness
	require.NoError(t, json.Unmarshal(got.body, &r), "%s", got.body)
	return r
}

func notReadyChecks(r readiness) []string {
	out := []string{}
	for _, c := range r.NotReady {
		out = append(out, c.Check)
	}
	return out
}

// readinessGauge reads meshrx_registry_ready{check}.
func readinessGauge(t *testing.T, f *fixture, check string) float64 {
	t.Helper()
	families, err := f.metrics.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() != "meshrx_registry_ready" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "check" && l.GetValue() == check {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	require.FailNow(t, "no readiness gauge", "check %q", check)
	return 0
}

// passingWithout runs every readiness check but the one named, as a
// registry without that check would: the negative control of a check.
func passingWithout(t *testing.T, f *fixture, name string) []string {
	t.Helper()
	failed := []string{}
	for _, c := range f.server.readinessChecks() {
		if c.name == name {
			continue
		}
		if res := f.server.runCheck(t.Context(), c); res != nil {
			failed = append(failed, res.Check)
		}
	}
	return failed
}

func TestLivezAnswersWhileTheProcessServesAndReadsNothing(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	gets, queries := f.mesh.reads()
	got := f.do(request{path: LivePath})
	assert.Equal(t, http.StatusOK, got.status)
	g2, q2 := f.mesh.reads()
	assert.Equal(t, [2]int64{gets, queries}, [2]int64{g2, q2}, "/livez reads nothing")
}

// failingScans makes the scan of the modules directory fail while it is on.
type failingScans struct {
	landing.Volume
	on atomic.Bool
}

func (v *failingScans) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if v.on.Load() && name == modulesDir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("input/output error")}
	}
	return v.Volume.ReadDir(ctx, name)
}

func TestReadyzSaysTheSnapshotIsStaleWhenReDerivationKeepsFailingAndTheLogSaysSoOnce(t *testing.T) {
	var scans *failingScans
	// Without the journal's tail: derivations alone keep the snapshot
	// covering what is committed.
	f := newFixture(t, fixtureOptions{volume: func(v landing.Volume) landing.Volume {
		scans = &failingScans{Volume: v}
		return scans
	}, served: func(o *ServedOptions) { o.JournalPeriod = NoJournal }})
	f.publish("A", "1.0.0", "")
	got := f.do(request{path: ReadyPath})
	require.Equal(t, http.StatusOK, got.status, "%s", got.body)
	assert.Equal(t, 1.0, readinessGauge(t, f, CheckSnapshot))

	// An idle replica's old snapshot is not stale when its re-derivation
	// succeeds: /readyz waits for the derivation its read started.
	f.clk.Advance(3*f.served.Freshness() + 1)
	got = f.do(request{path: ReadyPath})
	require.Equal(t, http.StatusOK, got.status, "%s", got.body)

	scans.on.Store(true)
	for range 2 {
		f.clk.Advance(f.served.Freshness())
		got = f.do(request{path: ReadyPath}) // each read past freshness starts a (failing) re-derivation
		// It fails on its own goroutine: let it end before virtual time
		// moves on, or a loaded machine sees its budget trip first.
		settle(t, f.served)
	}
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	r := readyAnswer(t, got)
	assert.Equal(t, "not ready", r.Status)
	assert.Equal(t, []string{CheckSnapshot}, notReadyChecks(r))
	assert.Contains(t, r.NotReady[0].Reason, "may be missing records")
	assert.NotContains(t, string(got.body), "input/output error", "the detail goes to the log")
	assert.NotEmpty(t, got.header.Get("Retry-After"))
	assert.Equal(t, 0.0, readinessGauge(t, f, CheckSnapshot))
	assert.Equal(t, 0.0, readinessGauge(t, f, "all"))

	// The first failed derivation logged that the snapshot grows stale, once.
	derivWarn := f.logs.Matching(slog.LevelWarn, "deriving the activation list failed")
	require.Len(t, derivWarn, 1, "one warning when derivations start failing, however many fail")
	assert.Contains(t, derivWarn[0].Attrs["error"].String(), "input/output error")
	assert.Contains(t, derivWarn[0].Attrs, "snapshotAge")
	// The readiness transition logged once, with the detail.
	f.do(request{path: ReadyPath})
	notReadyWarn := f.logs.Matching(slog.LevelWarn, "not ready: "+CheckSnapshot)
	require.Len(t, notReadyWarn, 1, "one warning per transition, not per poll")
	assert.Contains(t, notReadyWarn[0].Attrs["detail"].String(), "input/output error")

	// Negative control: a readiness without the snapshot check (what
	// /healthz checked before) says ready with this stale snapshot.
	assert.Empty(t, passingWithout(t, f, CheckSnapshot))

	// Recovery: the next derivation succeeds, ready again, one line.
	scans.on.Store(false)
	f.clk.Advance(f.served.Freshness())
	got = f.do(request{path: ReadyPath})
	assert.Equal(t, http.StatusOK, got.status, "%s", got.body)
	assert.Len(t, f.logs.Matching(slog.LevelInfo, "ready again: "+CheckSnapshot), 1)
	assert.Len(t, f.logs.Matching(slog.LevelInfo, "deriving the activation list succeeded again"), 1)
	assert.Equal(t, 1.0, readinessGauge(t, f, "all"))
}

func TestReadyzSaysTheStoreIsNotReadyWhilePostgreSQLIsStopped(t *testing.T) {
	if os.Getenv("MESHRX_REQUIRE_PG") == "" {
		if _, err := pgtest.FindBinaries(os.Getenv("PATH"), pgtest.DebianRoot); err != nil {
			t.Skip("PostgreSQL programs not found (set MESHRX_REQUIRE_PG=1 to fail instead):", err)
		}
	}
	// A server of the test's own, so that stopping it stops nobody else's.
	srv, err := pgtest.Config{}.Start(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	dbURL, err := srv.CreateDatabase(t.Context(), "readyz")
	require.NoError(t, err)
	store, err := pgstore.Open(t.Context(), dbURL, pgstore.Options{Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	f := newFixture(t, fixtureOptions{mesh: func(m *watchedMesh) { m.Store = store }})
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Bound)
	defer cancel()
	_, err = rx.First(ctx, f.server.catalog.read())
	require.NoError(t, err, "the catalog's first answer")
	got := f.do(request{path: ReadyPath})
	require.Equal(t, http.StatusOK, got.status, "%s", got.body)

	require.NoError(t, srv.Stop())
	f.clk.Advance(ReadinessReuse) // the last outcome answers for ReadinessReuse
	got = f.do(request{path: ReadyPath})
	require.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
	r := readyAnswer(t, got)
	assert.Contains(t, notReadyChecks(r), CheckStore)
	assert.NotContains(t, string(got.body), "postgres", "no internal text in the answer")
	assert.NotContains(t, string(got.body), "connect", "no internal text in the answer")
	assert.Equal(t, got.status, f.do(request{path: HealthPath}).status, "/healthz answers as /readyz")
	assert.Equal(t, http.StatusOK, f.do(request{path: LivePath}).status, "the process is alive")
	assert.Equal(t, 0.0, readinessGauge(t, f, CheckStore))
	warns := f.logs.Matching(slog.LevelWarn, "not ready: "+CheckStore)
	require.Len(t, warns, 1, "one warning for the transition, however often it is polled")
	assert.NotEmpty(t, warns[0].Attrs["detail"].String())

	// Negative control: without the store's probe read, the other checks
	// (what /healthz checked before) pass with the database stopped.
	assert.Empty(t, passingWithout(t, f, CheckStore))
}

func TestAFloodOfReadyzCostsTheStoreOneProbeReadPerInterval(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	gets, _ := f.mesh.reads()
	const flood = 64
	replies := make([]<-chan reply, flood)
	for i := range replies {
		replies[i] = f.send(request{path: ReadyPath})
	}
	for i, ch := range replies {
		got := testkit.Receive(t, ch, "a /readyz answer")
		require.NoError(t, got.err)
		assert.Equal(t, http.StatusOK, got.status, "request %d: %s", i, got.body)
	}
	after, _ := f.mesh.reads()
	assert.Equal(t, int64(1), after-gets, "64 concurrent /readyz, one probe read")

	// Control: the count does follow the checks' runs: once the outcome is
	// older than ReadinessReuse, the next /readyz reads again.
	f.clk.Advance(ReadinessReuse)
	require.Equal(t, http.StatusOK, f.do(request{path: ReadyPath}).status)
	again, _ := f.mesh.reads()
	assert.Equal(t, int64(2), again-gets)
}
