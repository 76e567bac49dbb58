package clientmetrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/registry/client"
)

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	require.FailNow(t, "gauge not registered", name)
	return 0
}

func TestTheGaugesMirrorAFailingAndARecoveredConsumer(t *testing.T) {
	reg := prometheus.NewRegistry()
	g, err := Register(reg)
	require.NoError(t, err)
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g.Set(client.ReconcilerStatus{FailingSince: since, LastError: "down"})
	assert.Equal(t, 1.0, gauge(t, reg, "meshrx_registry_consumer_failing"))
	assert.Equal(t, float64(since.Unix()), gauge(t, reg, "meshrx_registry_consumer_failing_since_seconds"))
	assert.Equal(t, 0.0, gauge(t, reg, "meshrx_registry_consumer_last_success_seconds"))

	ok := since.Add(time.Minute)
	g.Set(client.ReconcilerStatus{Healthy: true, LastSuccess: ok})
	assert.Equal(t, 0.0, gauge(t, reg, "meshrx_registry_consumer_failing"))
	assert.Equal(t, 0.0, gauge(t, reg, "meshrx_registry_consumer_failing_since_seconds"))
	assert.Equal(t, float64(ok.Unix()), gauge(t, reg, "meshrx_registry_consumer_last_success_seconds"))

	_, err = Register(reg)
	require.Error(t, err, "negative control: registering twice is refused, and names the gauges")
	assert.Contains(t, err.Error(), "consumer's gauges")
	g.Unregister()
	families, err := reg.Gather()
	require.NoError(t, err)
	assert.Empty(t, families, "Unregister leaves nothing behind")
}
