package registry_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/landing"
)

// Example wires a registry server: a store for the package nodes and
// instance keys, a landing on a directory, the served activation over it,
// and the server.
func Example() {
	dir, _ := os.MkdirTemp("", "registry-example")
	defer os.RemoveAll(dir)
	logger := slog.New(slog.DiscardHandler)

	store, _ := memstore.New(memstore.Options{Logger: logger})
	defer store.Close()
	modules, _ := landing.NewModuleLanding(landing.DirVolume(dir), landing.Options{Logger: logger})
	defer modules.Shutdown(context.Background())
	served := registry.NewServedActivation(modules, registry.ServedOptions{Logger: logger})
	defer served.Close(context.Background())
	srv, err := registry.NewServer(registry.ServerOptions{
		Served:  served,
		Auth:    &auth.Authenticator{Mesh: store, Ladder: &auth.PlanTierLadder{Mesh: store, Logger: logger}, Logger: logger},
		Mesh:    store,
		Version: "example",
		Logger:  logger,
		Metrics: prometheus.NewRegistry(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close(context.Background())

	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	resp, err := http.Get(web.URL + registry.VersionPath)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 200 OK
}
