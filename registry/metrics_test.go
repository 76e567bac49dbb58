package registry

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/client"
)

// gauge reads one unlabelled series from the server's registry.
func gauge(t *testing.T, f *fixture, name string) float64 {
	t.Helper()
	families, err := f.metrics.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		require.Len(t, mf.GetMetric(), 1, name)
		m := mf.GetMetric()[0]
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		}
	}
	require.FailNow(t, "no such series", name)
	return 0
}

// counter reads the series of a counter vector whose labels are exactly
// labels; 0 when there is none.
func counter(t *testing.T, f *fixture, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := f.metrics.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func TestMetricsExposeStagesRefusalsRequestsDerivationsAndSnapshotAge(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	f.index(key)
	f.index(key)
	assert.Equal(t, http.StatusUnauthorized, f.do(request{path: client.IndexPath}).status)

	// A refusal while waiting on the grant leg.
	stalled := make(chan string, 1)
	f.mesh.mu.Lock()
	f.mesh.stallGet, f.mesh.stalled = auth.GrantPath("acme"), stalled
	f.mesh.mu.Unlock()
	replies := f.send(request{path: client.IndexPath, key: key})
	testkit.Receive(t, stalled, "the grant leg being read")
	f.clk.Advance(auth.DefaultReadBudget)
	require.Equal(t, http.StatusServiceUnavailable, testkit.Receive(t, replies, "the refusal").status)

	got := f.scrape()
	text := string(got)
	for _, line := range []string{
		`meshrx_registry_requests_total{route="index",status="200"} 2`,
		`meshrx_registry_requests_total{route="index",status="401"} 1`,
		`meshrx_registry_requests_total{route="index",status="503"} 1`,
		`meshrx_registry_unavailable_total{route="index",stage="instance-key authentication"} 1`,
		`meshrx_registry_activation_derivations_total 1`,
		`meshrx_registry_index_assemblies_total 1`,
		`meshrx_registry_catalog_available 1`,
		// The snapshot was derived at the clock's start; the clock has moved
		// by the grant leg's budget since.
		fmt.Sprintf(`meshrx_registry_snapshot_age_seconds %g`, auth.DefaultReadBudget.Seconds()),
		// Stage durations are virtual: the refused request spent the whole
		// read budget in authentication, the other three (the 401 included)
		// nothing.
		`meshrx_registry_stage_duration_seconds_count{route="index",stage="instance-key authentication"} 4`,
		`meshrx_registry_stage_duration_seconds_sum{route="index",stage="instance-key authentication"} 10`,
		`meshrx_registry_stage_duration_seconds_count{route="index",stage="activation list"} 2`,
		`meshrx_registry_stage_duration_seconds_count{route="index",stage="package catalog"} 2`,
	} {
		assert.Contains(t, text, line+"\n")
	}
}

func TestTheMetricsAreTheServersOwnAndLeaveWithIt(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	// A second server on the same registerer collides with the first.
	_, err := NewServer(ServerOptions{Served: f.served, Auth: f.server.auth, Mesh: f.mesh, Metrics: f.metrics})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "registering the server's metrics")

	require.NoError(t, f.server.Close(t.Context()))
	families, err := f.metrics.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		assert.False(t, strings.HasPrefix(mf.GetName(), "meshrx_registry_"), "%s outlived its server", mf.GetName())
	}
	// Control: once the first is gone, another server registers.
	s, err := NewServer(ServerOptions{Served: f.served, Auth: f.server.auth, Mesh: f.mesh, Metrics: f.metrics, Clock: f.clk})
	require.NoError(t, err)
	require.NoError(t, s.Close(t.Context()))
}

// scrape reads /metrics from the server's metrics handler, on a server of
// its own as a deployment serves it.
func (f *fixture) scrape() []byte {
	f.t.Helper()
	srv := httptest.NewServer(f.server.MetricsHandler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + MetricsPath)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	require.Equal(f.t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	return body
}

func TestMetricsAreNotServedByThePublicHandler(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	got := f.do(request{path: MetricsPath})
	assert.Equal(t, http.StatusNotFound, got.status, "the public listener has no /metrics")
	assert.NotContains(t, string(got.body), "meshrx_registry")
	// Control: the metrics handler serves them.
	assert.Contains(t, string(f.scrape()), "meshrx_registry_catalog_available")
}
