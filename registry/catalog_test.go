package registry

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/rx"
)

func packageNode(plugin, content string) mesh.Node {
	return mesh.Node{ID: plugin, Namespace: DefaultSource, Path: DefaultSource + "/" + plugin, NodeType: PackageNodeType, Content: json.RawMessage(content)}
}

func TestTheCatalogIsOneLiveQueryNotOnePerRequest(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	// Control: the counter sees the server's own live query, started once.
	require.EqualValues(t, 1, f.mesh.catalogQueries.Load())
	for range 20 {
		f.index(key)
		f.do(request{path: client.BundlesPath + "/A/1.0.0", key: key})
	}
	assert.EqualValues(t, 1, f.mesh.catalogQueries.Load(), "requests read the catalog's state, never the mesh")
}

func TestAPackageTierChangeReachesTheIndexThroughTheLiveQuery(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "enterprise")
	key := f.instance("acme", "pro", "Plugins/*")
	idx, _ := f.index(key)
	assert.Empty(t, idx.Bundles, "an enterprise package is beyond a pro plan")

	f.putPackage(packageNode("A", `{"tier":"pro"}`))
	idx, _ = f.index(key)
	assert.Equal(t, map[string]string{"A": "1.0.0"}, listed(idx))

	// Removing the node withholds the package: a tier that is not known is
	// never guessed as the baseline.
	f.deletePackage(DefaultSource + "/A")
	idx, _ = f.index(key)
	assert.Empty(t, listed(idx))
}

func TestAPackageWhoseNodeCannotBeReadIsServedToNobody(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	f.publish("B", "1.0.0", "")
	f.putPackage(packageNode("B", `{"tier": 5}`))
	key := f.instance("acme", "enterprise", "Plugins/*")
	idx, _ := f.index(key)
	assert.Equal(t, map[string]string{"A": "1.0.0"}, listed(idx), "an unreadable tier is not guessed")
	assert.Equal(t, http.StatusNotFound, f.do(request{path: client.BundlesPath + "/B/1.0.0", key: key}).status)
	warns := f.logs.At(slog.LevelWarn)
	require.NotEmpty(t, warns)
	assert.Contains(t, warns[len(warns)-1].Attrs["problem"].String(), DefaultSource+"/B")

	// Control: fixing the node serves it.
	f.putPackage(packageNode("B", `{"tier":"pro"}`))
	idx, _ = f.index(key)
	assert.Equal(t, map[string]string{"A": "1.0.0", "B": "1.0.0"}, listed(idx))
}

func TestAnUnavailableCatalogServesItsLastKnownStateAndSaysSo(t *testing.T) {
	queries := make(chan *rx.Subject[mesh.Change], 4)
	f := newFixture(t, fixtureOptions{mesh: func(m *watchedMesh) {
		m.catalogQ = func() rx.Observable[mesh.Change] {
			s := rx.NewSubject[mesh.Change]()
			queries <- s
			return s
		}
	}})
	f.publish("A", "1.0.0", "")
	f.publish("B", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	live := testkit.Receive(t, queries, "the catalog's live query")
	live.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{packageNode("A", `{"tier":"pro"}`), packageNode("B", `{"tier":"enterprise"}`)}})
	idx, _ := f.index(key)
	assert.Equal(t, map[string]string{"A": "1.0.0"}, listed(idx))
	assert.Equal(t, 1.0, gauge(t, f, "meshrx_registry_catalog_available"))

	live.OnError(errors.New("store went away"))
	idx, _ = f.index(key)
	assert.Equal(t, map[string]string{"A": "1.0.0"}, listed(idx), "the last known state is still served")
	health := f.do(request{path: HealthPath})
	assert.Equal(t, http.StatusServiceUnavailable, health.status)
	assert.Contains(t, string(health.body), CheckCatalog)
	assert.NotContains(t, string(health.body), "store went away", "the detail goes to the log, not the answer")
	assert.Equal(t, 0.0, gauge(t, f, "meshrx_registry_catalog_available"))
	f.clk.Advance(DefaultCatalogRetry - 1)
	assert.Equal(t, float64(DefaultCatalogRetry-1)/1e9, gauge(t, f, "meshrx_registry_catalog_unavailable_seconds"))
	warns := f.logs.Matching(slog.LevelWarn, "package catalog is unavailable")
	require.Len(t, warns, 1, "one warning on the way into failure")
	assert.Empty(t, queries, "the retry waits its delay")

	// The retry is live again, with a changed tier: the index follows.
	f.clk.Advance(1)
	retry := testkit.Receive(t, queries, "the retried live query")
	retry.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{packageNode("A", `{"tier":"enterprise"}`), packageNode("B", `{"tier":"pro"}`)}})
	idx, _ = f.index(key)
	assert.Equal(t, map[string]string{"B": "1.0.0"}, listed(idx))
	assert.Equal(t, http.StatusOK, f.do(request{path: HealthPath}).status)
	assert.Len(t, f.logs.Matching(slog.LevelInfo, "package catalog is live again"), 1, "one line on recovery")
}

func TestTwoPackageNodesWhoseNamesDifferOnlyInCaseAreOnePackageServedToNobody(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("Sec.Ent", "1.0.0", "enterprise")
	key := f.instance("acme", "enterprise", "Plugins/*")
	idx, _ := f.index(key)
	require.Equal(t, map[string]string{"Sec.Ent": "1.0.0"}, listed(idx), "control: one node, served at its tier")

	// A second node under another spelling (written before identities were
	// compared without case) gives the package two tiers: neither is guessed.
	f.putPackage(packageNode("sec.ent", `{"tier":""}`))
	idx, _ = f.index(key)
	assert.Empty(t, idx.Bundles)
	assert.Equal(t, http.StatusNotFound, f.do(request{path: client.BundlesPath + "/sec.ent/1.0.0", key: key}).status)

	// Removing the stray node serves the package again at its tier.
	f.deletePackage(DefaultSource + "/sec.ent")
	idx, _ = f.index(key)
	assert.Equal(t, map[string]string{"Sec.Ent": "1.0.0"}, listed(idx))
	pro := f.instance("pro-customer", "pro", "Plugins/*")
	idx, _ = f.index(pro)
	assert.Empty(t, idx.Bundles, "at its tier, not the stray node's")
}
