package clientmetrics_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/client/clientmetrics"
)

// Example mirrors a Reconciler's status in Prometheus gauges.
func Example() {
	g, err := clientmetrics.Register(prometheus.NewRegistry())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Unregister()
	rec := &client.Reconciler{Gauges: g} // with Client and Apply set, Run keeps the gauges current
	fmt.Println(rec.Gauges != nil)
	// Output: true
}
