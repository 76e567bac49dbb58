package client_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
)

// Example consumes a registry: it reads the index its instance key is
// entitled to and downloads a bundle, checked against the index's sha256.
func Example() {
	ctx := context.Background()
	url, key, stop := exampleRegistry(ctx)
	defer stop()

	c, err := client.New(client.Options{BaseURL: url, Key: key})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseIdleConnections()
	idx, _, err := c.Index(ctx, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range idx.Bundles {
		bundle, err := c.Download(ctx, e)
		if err != nil {
			fmt.Println(err)
			return
		}
		n, err := io.Copy(io.Discard, bundle) // a bundle that does not match its sha256 fails here
		bundle.Close()
		fmt.Println(e.Plugin, e.Version, n > 0, err)
	}
	// Output: Demo.Hello 1.0.0 true <nil>
}

// examplePublishToken is the example registry's publish token.
const examplePublishToken = "example-publish-token"

// ExampleClient_Publish publishes a bundle, then meets the two refusals a
// publisher meets first: other bytes under a published version (409, with
// both sha256) and a tier the registry's plan ladder does not have (400,
// with the known tiers). A 503 is retried after its Retry-After.
func ExampleClient_Publish() {
	ctx := context.Background()
	url, _, stop := exampleRegistry(ctx)
	defer stop()

	c, err := client.New(client.Options{BaseURL: url, PublishToken: examplePublishToken})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseIdleConnections()
	p, err := c.Publish(ctx, "My.Plugin", "1.0.0", "free", bytes.NewReader(exampleBundle("one")))
	fmt.Println("created:", p.Created, err)

	_, err = c.Publish(ctx, "My.Plugin", "1.0.0", "free", bytes.NewReader(exampleBundle("two")))
	var conflict *client.ConflictError
	if errors.As(err, &conflict) {
		fmt.Println("409: 1.0.0 holds other bytes:", conflict.PublishedSHA256 != conflict.GivenSHA256)
	}
	_, err = c.Publish(ctx, "My.Plugin", "1.0.1", "gold", bytes.NewReader(exampleBundle("two")))
	var tier *client.UnknownTierError
	if errors.As(err, &tier) {
		fmt.Println("400: known tiers", tier.Known)
	}
	// Output:
	// created: true <nil>
	// 409: 1.0.0 holds other bytes: true
	// 400: known tiers [free]
}

// exampleBundle is a zip archive holding one file with text.
func exampleBundle(text string) []byte {
	var archive bytes.Buffer
	zw := zip.NewWriter(&archive)
	w, _ := zw.Create("README.txt")
	_, _ = w.Write([]byte(text))
	_ = zw.Close()
	return archive.Bytes()
}

// exampleRegistry runs a registry serving one module, Demo.Hello 1.0.0, and
// returns its URL and an instance key entitled to it.
func exampleRegistry(ctx context.Context) (url, key string, stop func()) {
	logger := slog.New(slog.DiscardHandler)
	dir, _ := os.MkdirTemp("", "client-example")
	store, _ := memstore.New(memstore.Options{Logger: logger})
	modules, _ := landing.NewModuleLanding(landing.DirVolume(dir), landing.Options{Logger: logger})
	served := registry.NewServedActivation(modules, registry.ServedOptions{Logger: logger})
	srv, _ := registry.NewServer(registry.ServerOptions{
		Served:  served,
		Auth:    &auth.Authenticator{Mesh: store, Ladder: &auth.PlanTierLadder{Mesh: store, Logger: logger}, Logger: logger},
		Mesh:    store,
		Logger:  logger,
		Metrics: prometheus.NewRegistry(),

		PublishToken: examplePublishToken,
	})
	web := httptest.NewServer(srv.Handler())
	stop = func() {
		web.Close()
		_ = srv.Close(ctx)
		_ = served.Close(ctx)
		_ = modules.Shutdown(ctx)
		_ = store.Close()
		_ = os.RemoveAll(dir)
	}

	reg := &auth.Instances{Mesh: store}
	_ = reg.SetPlanTier(ctx, auth.PlanTier{ID: "free", Rank: 0})
	content, _ := json.Marshal(registry.PackageContent{Tier: "free"})
	_, _ = store.Put(ctx, mesh.Node{Path: registry.DefaultSource + "/Demo.Hello", NodeType: registry.PackageNodeType, Content: content})
	var archive bytes.Buffer
	zw := zip.NewWriter(&archive)
	w, _ := zw.Create("hello.txt")
	_, _ = w.Write([]byte("hello"))
	_ = zw.Close()
	_, _ = served.Land(ctx, "Demo.Hello", "1.0.0", archive.Bytes())
	_, _ = reg.Register(ctx, "consumer", "example consumer", "free")
	_, _ = reg.SetGrant(ctx, "consumer", "example", registry.DefaultSource+"/*")
	key, _ = reg.IssueKey(ctx, "consumer")
	return web.URL, key, stop
}
