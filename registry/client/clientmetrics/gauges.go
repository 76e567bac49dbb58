// Package clientmetrics mirrors a registry consumer's status in Prometheus
// gauges, so that a consumer whose polls fail is visible on a dashboard:
//
//	g, err := clientmetrics.Register(prometheus.DefaultRegisterer)
//	if err != nil { ... }
//	defer g.Unregister()
//	rec := &client.Reconciler{Client: c, Apply: apply, Gauges: g}
//
// Package client itself does not import Prometheus.
//
// # Examples
//
// Example (example_test.go) is a worked example,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./registry/client/clientmetrics/.
package clientmetrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshrx/meshrx/registry/client"
)

// Gauges are the metrics that make a failing consumer visible:
// meshrx_registry_consumer_failing, _failing_since_seconds and
// _last_success_seconds. They implement client.StatusGauges.
type Gauges struct {
	reg                                prometheus.Registerer
	failing, failingSince, lastSuccess prometheus.Gauge
}

var _ client.StatusGauges = (*Gauges)(nil)

// Register registers the gauges with reg; Unregister removes them. On an
// error nothing stays registered.
func Register(reg prometheus.Registerer) (*Gauges, error) {
	g := &Gauges{
		reg: reg,
		failing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "meshrx_registry_consumer_failing",
			Help: "1 while the registry consumer's polls fail (its catalogue is not being refreshed), 0 otherwise.",
		}),
		failingSince: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "meshrx_registry_consumer_failing_since_seconds",
			Help: "Unix time at which the current run of failed polls began; 0 when healthy.",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "meshrx_registry_consumer_last_success_seconds",
			Help: "Unix time of the last successful poll; 0 if none has succeeded.",
		}),
	}
	for i, c := range g.collectors() {
		if err := reg.Register(c); err != nil {
			for _, done := range g.collectors()[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("registry: registering the consumer's gauges: %w", err)
		}
	}
	return g, nil
}

func (g *Gauges) collectors() []prometheus.Collector {
	return []prometheus.Collector{g.failing, g.failingSince, g.lastSuccess}
}

// Unregister removes the gauges from the registerer they were registered with.
func (g *Gauges) Unregister() {
	for _, c := range g.collectors() {
		g.reg.Unregister(c)
	}
}

// Set mirrors st in the gauges.
func (g *Gauges) Set(st client.ReconcilerStatus) {
	failing := 0.0
	if !st.Healthy && !st.FailingSince.IsZero() {
		failing = 1
	}
	g.failing.Set(failing)
	g.failingSince.Set(unixSeconds(st.FailingSince))
	g.lastSuccess.Set(unixSeconds(st.LastSuccess))
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
