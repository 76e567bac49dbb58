package registry

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

func decodePublish(t *testing.T, got reply) PublishAnswer {
	t.Helper()
	var a PublishAnswer
	require.NoError(t, json.Unmarshal(got.body, &a), "%s", got.body)
	return a
}

func TestAPublishedVersionIsImmutableTheSameBytesAre200AndOtherBytes409NamingTheExistingSha256(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	key := f.instance("acme", "pro", "Plugins/*")
	first := testkit.ModuleArchive(t, "Sec.Base", "1.0.0", 2)
	got := f.do(publishRequest("Sec.Base", "?version=1.0.0", testPublishToken, first))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	landed := decodePublish(t, got)
	assert.True(t, landed.Created)
	gens := testkit.Generations(t, f.root, "Sec.Base")
	require.Len(t, gens, 1)

	// The same bytes again: 200, the same record, no new generation.
	got = f.do(publishRequest("Sec.Base", "?version=1.0.0", testPublishToken, first))
	require.Equal(t, http.StatusOK, got.status, "%s", got.body)
	again := decodePublish(t, got)
	assert.False(t, again.Created)
	assert.Equal(t, landed.Generation, again.Generation)
	assert.Equal(t, landed.SHA256, again.SHA256)
	assert.Equal(t, gens, testkit.Generations(t, f.root, "Sec.Base"), "an idempotent publish writes no generation")

	// Other bytes: 409 naming the sha256 the version holds; nothing changes.
	other := testkit.ModuleArchive(t, "Sec.Base", "1.0.0", 3)
	got = f.do(publishRequest("Sec.Base", "?version=1.0.0", testPublishToken, other))
	require.Equal(t, http.StatusConflict, got.status, "%s", got.body)
	assert.Contains(t, string(got.body), landed.SHA256)
	assert.Equal(t, gens, testkit.Generations(t, f.root, "Sec.Base"))
	idx, _ := f.index(key)
	require.Len(t, idx.Bundles, 1)
	assert.Equal(t, landed.SHA256, idx.Bundles[0].SHA256, "the served sha256 of 1.0.0 never changes")

	// Control: the other bytes as a new version land, so it is the version
	// that refused them.
	got = f.do(publishRequest("Sec.Base", "?version=1.0.1", testPublishToken, other))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
}

func TestOfConcurrentPublishesOfOneVersionExactlyOneLands(t *testing.T) {
	const publishers = 10
	f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) { o.UploadSlots = publishers }})
	replies := make([]<-chan reply, publishers)
	for i := range publishers {
		replies[i] = f.send(publishRequest("Sec.Base", "?version=1.0.0", testPublishToken, testkit.ModuleArchive(t, "Sec.Base", "1.0.0", i+1)))
	}
	statuses := map[int]int{}
	var winner string
	for i := range publishers {
		got := testkit.Receive(t, replies[i], fmt.Sprintf("publisher %d's answer", i))
		require.NoError(t, got.err)
		statuses[got.status]++
		if got.status == http.StatusCreated {
			winner = decodePublish(t, got).SHA256
		}
	}
	assert.Equal(t, map[int]int{http.StatusCreated: 1, http.StatusConflict: publishers - 1}, statuses)
	assert.Len(t, testkit.Generations(t, f.root, "Sec.Base"), 1)
	key := f.instance("acme", "pro", "Plugins/*")
	idx, _ := f.index(key)
	require.Len(t, idx.Bundles, 1)
	assert.Equal(t, winner, idx.Bundles[0].SHA256)
}

func TestAPackageHasOneIdentityWhateverItsCase(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	require.Equal(t, http.StatusCreated, f.do(publishRequest("Sec.Ent", "?version=1.0.0&tier=enterprise", testPublishToken, testkit.ModuleArchive(t, "Sec.Ent", "1.0.0", 1))).status)
	got := f.do(publishRequest("sec.ent", "?version=1.1.0&tier=free", testPublishToken, testkit.ModuleArchive(t, "sec.ent", "1.1.0", 1)))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	a := decodePublish(t, got)
	assert.Equal(t, "Sec.Ent", a.Module, "the first spelling is the package's name")
	assert.Equal(t, "enterprise", a.Tier, "an existing package keeps its tier")

	ch, err := rx.First(t.Context(), f.store.Query("namespace:"+DefaultSource+" nodeType:"+PackageNodeType))
	require.NoError(t, err)
	require.Len(t, ch.Items, 1, "one package node whatever the case")
	assert.JSONEq(t, `{"tier":"enterprise"}`, string(ch.Items[0].Content))

	pro := f.instance("pro-customer", "pro", "Plugins/*")
	ent := f.instance("ent-customer", "enterprise", "Plugins/sec.ent")
	for _, p := range []string{"/sec.ent/1.1.0", "/Sec.Ent/1.1.0", "/SEC.ENT/1.1.0"} {
		assert.Equal(t, http.StatusNotFound, f.do(request{path: client.BundlesPath + p, key: pro}).status, "pro key, %s", p)
		// Control: the enterprise key, granted under another spelling, gets it.
		assert.Equal(t, http.StatusOK, f.do(request{path: client.BundlesPath + p, key: ent}).status, "enterprise key, %s", p)
	}
	idx, _ := f.index(pro)
	assert.Empty(t, idx.Bundles)
	idx, _ = f.index(ent)
	assert.Equal(t, map[string]string{"Sec.Ent": "1.1.0"}, listed(idx))
}

func TestAnUnknownTierIsRefusedWith400NamingTheKnownTiers(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	got := f.do(publishRequest("Acme.Gold", "?version=1.0.0&tier=gold", testPublishToken, testkit.ModuleArchive(t, "Acme.Gold", "1.0.0", 1)))
	require.Equal(t, http.StatusBadRequest, got.status, "%s", got.body)
	assert.Contains(t, string(got.body), "free, pro, enterprise")
	assert.Empty(t, f.activation(), "nothing lands")
	_, err := rx.First(t.Context(), f.store.Get(packageNodePath(DefaultSource, "Acme.Gold")))
	assert.ErrorIs(t, err, rx.ErrEmpty, "no package node is written")

	// Control: a known tier publishes.
	got = f.do(publishRequest("Acme.Gold", "?version=1.0.0&tier=PRO", testPublishToken, testkit.ModuleArchive(t, "Acme.Gold", "1.0.0", 1)))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
}

// failingPackagePuts is the real store with writes of package nodes failing,
// as a store that went away does.
type failingPackagePuts struct {
	mesh.Store
	mu   sync.Mutex
	fail bool
}

func (m *failingPackagePuts) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	m.mu.Lock()
	fail := m.fail
	m.mu.Unlock()
	if fail && n.NodeType == PackageNodeType {
		return mesh.Node{}, &mesh.UnavailableError{Op: "put " + n.Path, Err: fmt.Errorf("connection refused")}
	}
	return m.Store.Put(ctx, n)
}

func (m *failingPackagePuts) PutIfVersion(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	m.mu.Lock()
	fail := m.fail
	m.mu.Unlock()
	if fail && n.NodeType == PackageNodeType {
		return mesh.Node{}, &mesh.UnavailableError{Op: "put " + n.Path, Err: fmt.Errorf("connection refused")}
	}
	return m.Store.PutIfVersion(ctx, n, expected)
}

func TestAPublishThatDoesNotAnswer2xxLeavesNothingServed(t *testing.T) {
	var puts *failingPackagePuts
	f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) {
		puts = &failingPackagePuts{Store: o.Mesh, fail: true}
		o.Mesh = puts
	}})
	got := f.do(publishRequest("Acme.Pro", "?version=1.0.0&tier=pro", testPublishToken, testkit.ModuleArchive(t, "Acme.Pro", "1.0.0", 1)))
	assert.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
	assert.Empty(t, f.activation(), "a publication whose tier is not durable does not land")
	assert.Empty(t, testkit.Generations(t, f.root, "Acme.Pro"))
	free := f.instance("free-customer", "free", "Plugins/*")
	idx, _ := f.index(free)
	assert.Empty(t, idx.Bundles)

	// Control: with the store answering, the same publication lands and is
	// served only to plans that cover its tier.
	puts.mu.Lock()
	puts.fail = false
	puts.mu.Unlock()
	// The catalog hears of the package node on its query's goroutine:
	// wait (bounded) for it, as a consumer polling later would see it.
	f.catalogApplies(func() {
		got = f.do(publishRequest("Acme.Pro", "?version=1.0.0&tier=pro", testPublishToken, testkit.ModuleArchive(t, "Acme.Pro", "1.0.0", 1)))
	})
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	idx, _ = f.index(free)
	assert.Empty(t, idx.Bundles)
	pro := f.instance("pro-customer", "pro", "Plugins/*")
	idx, _ = f.index(pro)
	assert.Equal(t, map[string]string{"Acme.Pro": "1.0.0"}, listed(idx))
}

func TestAReplicaThatDoesNotKnowAPackagesTierLeavesItOutOfEveryIndexAndRefusesItsDownload(t *testing.T) {
	queries := make(chan *rx.Subject[mesh.Change], 4)
	f := newFixture(t, fixtureOptions{mesh: func(m *watchedMesh) {
		m.catalogQ = func() rx.Observable[mesh.Change] {
			s := rx.NewSubject[mesh.Change]()
			queries <- s
			return s
		}
	}})
	free := f.instance("free-customer", "free", "Plugins/*")
	live := testkit.Receive(t, queries, "the catalog's live query")
	live.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{packageNode("Acme.Old", `{"tier":""}`)}})
	ok, _ := f.server.catalog.Complete()
	require.True(t, ok)

	// The catalog's feed drops; meanwhile another replica publishes a pro
	// package (its node and its bundle are durable; this replica has not
	// heard of the node).
	live.OnError(&mesh.UnavailableError{Op: "listen", Err: fmt.Errorf("connection refused")})
	other := newLanding(t, landing.DirVolume(f.root), landing.Options{Replica: "other"})
	for _, m := range []string{"Acme.Old", "Acme.Pro"} {
		_, err := other.Land(t.Context(), m, "1.0.0", testkit.ModuleArchive(t, m, "1.0.0", 1))
		require.NoError(t, err)
	}
	f.clk.Advance(f.served.Freshness())
	f.index(free)
	f.settle()
	require.Equal(t, map[string]string{"Acme.Old": "1.0.0", "Acme.Pro": "1.0.0"}, servedVersions(mustSnapshot(t, f).Activation()), "this replica serves both bundles")

	complete, reason := f.server.catalog.Complete()
	assert.False(t, complete)
	assert.Contains(t, reason, "connection refused", "the reason /readyz can give")
	idx, _ := f.index(free)
	assert.Equal(t, map[string]string{"Acme.Old": "1.0.0"}, listed(idx), "a package whose tier is not known is in no index")
	before := f.volume.Ops()
	got := f.do(request{path: client.BundlesPath + "/Acme.Pro/1.0.0", key: free})
	assert.Equal(t, http.StatusNotFound, got.status)
	assert.Equal(t, noSuchBundle().Body, got.body)
	assert.Zero(t, f.volume.Ops().Sub(before).Total(), "refused from the catalog, before the volume")

	// Control: once the catalog knows the tier, it decides: a free key is
	// still refused the pro package and a pro key gets it.
	f.clk.Advance(DefaultCatalogRetry)
	retry := testkit.Receive(t, queries, "the catalog's retried query")
	retry.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{packageNode("Acme.Old", `{"tier":""}`), packageNode("Acme.Pro", `{"tier":"pro"}`)}})
	complete, _ = f.server.catalog.Complete()
	assert.True(t, complete)
	idx, _ = f.index(free)
	assert.Equal(t, map[string]string{"Acme.Old": "1.0.0"}, listed(idx))
	pro := f.instance("pro-customer", "pro", "Plugins/*")
	idx, _ = f.index(pro)
	assert.Equal(t, map[string]string{"Acme.Old": "1.0.0", "Acme.Pro": "1.0.0"}, listed(idx))
	assert.Equal(t, http.StatusOK, f.do(request{path: client.BundlesPath + "/Acme.Pro/1.0.0", key: pro}).status)
}

func mustSnapshot(t *testing.T, f *fixture) Snapshot {
	t.Helper()
	s, ok := f.served.Snapshot()
	require.True(t, ok)
	return s
}

func TestARefusedDownloadAndAMissingPackageDoTheSameWork(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("Acme.Ent", "1.0.0", "enterprise")
	free := f.instance("free-customer", "free", "Plugins/*")
	f.do(request{path: client.BundlesPath + "/Warm.Up/1.0.0", key: free}) // the key's legs are warm for both

	work := func(p string) (reply, testkit.OpCounts, [2]int64) {
		ops := f.volume.Ops()
		g, q := f.mesh.reads()
		got := f.do(request{path: client.BundlesPath + p, key: free})
		g2, q2 := f.mesh.reads()
		return got, f.volume.Ops().Sub(ops), [2]int64{g2 - g, q2 - q}
	}
	refused, refusedOps, refusedReads := work("/Acme.Ent/1.0.0")
	missing, missingOps, missingReads := work("/Acme.Nothing/1.0.0")
	assert.Equal(t, http.StatusNotFound, refused.status)
	assert.Equal(t, missing.status, refused.status)
	assert.Equal(t, missing.body, refused.body, "byte-identical answers")
	assert.Equal(t, testkit.OpCounts{}, refusedOps, "a refused download does not touch the volume")
	assert.Equal(t, missingOps, refusedOps)
	assert.Equal(t, missingReads, refusedReads, "and reads the same from the mesh")

	// Control (the counter sees a download's volume work): an entitled
	// download opens the bundle. Before this fix the refused download did
	// that same work (records read, bundle opened) before it was refused,
	// which 1,500 alternating requests told apart from a missing package.
	ent := f.instance("ent-customer", "enterprise", "Plugins/*")
	ops := f.volume.Ops()
	assert.Equal(t, http.StatusOK, f.do(request{path: client.BundlesPath + "/Acme.Ent/1.0.0", key: ent}).status)
	assert.NotZero(t, f.volume.Ops().Sub(ops).Open)
}

func TestWhileTheStoresChangeFeedIsDownTheCatalogIsIncompleteUntilAFullAnswer(t *testing.T) {
	queries := make(chan *rx.Subject[mesh.Change], 2)
	feed := rx.NewBehaviorSubject[error](nil)
	f := newFixture(t, fixtureOptions{
		mesh: func(m *watchedMesh) {
			m.catalogQ = func() rx.Observable[mesh.Change] {
				s := rx.NewSubject[mesh.Change]()
				queries <- s
				return s
			}
		},
		server: func(o *ServerOptions) { o.Feed = feed },
	})
	live := testkit.Receive(t, queries, "the catalog's live query")
	live.OnNext(mesh.Change{Kind: mesh.Initial, Items: []mesh.Node{packageNode("Acme.Old", `{"tier":""}`)}})
	complete, _ := f.server.catalog.Complete()
	require.True(t, complete)

	// The feed drops: the live query stays subscribed but hears nothing.
	feed.OnNext(fmt.Errorf("listener: connection refused"))
	complete, reason := f.server.catalog.Complete()
	assert.False(t, complete, "a catalog that can miss changes is not complete")
	assert.Contains(t, reason, "connection refused")
	feed.OnNext(nil)
	complete, _ = f.server.catalog.Complete()
	assert.False(t, complete, "back, but changes made meanwhile are not in yet")
	live.OnNext(mesh.Change{Kind: mesh.Reset, Items: []mesh.Node{packageNode("Acme.Old", `{"tier":""}`), packageNode("Acme.New", `{"tier":"pro"}`)}})
	complete, _ = f.server.catalog.Complete()
	assert.True(t, complete, "the full answer after the feed is back completes it")
	st, _ := f.server.catalog.current()
	assert.Equal(t, "pro", st.lookup("acme.new").tier)

	// Negative control: without the feed's state the same outage is silent
	// (the catalog claims to be complete while it hears nothing).
	g := newFixture(t, fixtureOptions{})
	require.Eventually(t, func() bool { ok, _ := g.server.catalog.Complete(); return ok }, testkit.Bound, time.Millisecond)
	feed.OnNext(fmt.Errorf("listener: connection refused"))
	complete, _ = g.server.catalog.Complete()
	assert.True(t, complete)
}

// bombOf is an archive of n entries of 1 MiB of zeros each, compressed once
// and repeated: the 255 entries land 256 MB from 287 KB.
func bombOf(t *testing.T, n int) []byte {
	t.Helper()
	var deflated bytes.Buffer
	fw, err := flate.NewWriter(&deflated, flate.BestCompression)
	require.NoError(t, err)
	body := make([]byte, ratioFloor)
	_, err = fw.Write(body)
	require.NoError(t, err)
	require.NoError(t, fw.Close())
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range n {
		h := &zip.FileHeader{Name: fmt.Sprintf("lib/part-%03d.bin", i), Method: zip.Deflate,
			CRC32: crc32.ChecksumIEEE(body), CompressedSize64: uint64(deflated.Len()), UncompressedSize64: uint64(len(body))}
		h.SetMode(0o644)
		w, err := zw.CreateRaw(h)
		require.NoError(t, err)
		_, err = w.Write(deflated.Bytes())
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestAnArchiveOfManySmallEntriesThatExpandsFarBeyondItselfIsRefusedWhole(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	bomb := bombOf(t, 255)
	require.Less(t, len(bomb), 1<<20, "the whole archive is small")
	got := f.do(publishRequest("Acme.Bomb", "?version=1.0.0", testPublishToken, bomb))
	assert.Equal(t, http.StatusBadRequest, got.status, "%s", got.body)
	assert.Contains(t, string(got.body), "suspicious compression ratio")
	assert.Empty(t, f.activation())
	assert.Empty(t, testkit.Generations(t, f.root, "Acme.Bomb"), "nothing was extracted")

	// Control: one such entry alone passes every check (it is under the
	// per-entry floor), so it is the archive as a whole that was judged.
	got = f.do(publishRequest("Acme.Bomb", "?version=1.0.0", testPublishToken, bombOf(t, 1)))
	assert.Equal(t, http.StatusCreated, got.status, "%s", got.body)
}

func TestPublishingToAPackageWhoseNodeCannotBeUsedIs409AndLandsNothing(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	// Nodes written beside the publish route, at paths of their own
	// spelling: a publication finds them through the catalog, so the test
	// waits for it to apply them.
	f.putPackage(packageNode("Acme.Bad", `{"tier": 5}`))
	got := f.do(publishRequest("acme.bad", "?version=1.0.0", testPublishToken, testkit.ModuleArchive(t, "Acme.Bad", "1.0.0", 1)))
	assert.Equal(t, http.StatusConflict, got.status, "%s", got.body)
	assert.Contains(t, string(got.body), DefaultSource+"/Acme.Bad")

	f.putPackage(packageNode("Acme.Bad", `{"tier":"pro"}`))
	f.putPackage(packageNode("ACME.BAD", `{"tier":""}`))
	got = f.do(publishRequest("acme.bad", "?version=1.0.0", testPublishToken, testkit.ModuleArchive(t, "Acme.Bad", "1.0.0", 1)))
	assert.Equal(t, http.StatusConflict, got.status, "%s", got.body)
	assert.Contains(t, string(got.body), "name one package")
	assert.Empty(t, f.activation())

	// Control: with one usable node the publication lands, under its spelling.
	f.deletePackage(DefaultSource + "/ACME.BAD")
	got = f.do(publishRequest("acme.bad", "?version=1.0.0", testPublishToken, testkit.ModuleArchive(t, "Acme.Bad", "1.0.0", 1)))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	assert.Equal(t, "Acme.Bad", decodePublish(t, got).Module)
	assert.Equal(t, "pro", decodePublish(t, got).Tier)
}

// A version number is never reused, as on crates.io and npm: Remove gives
// up a module's versions (none can be shelved again) but not their claims,
// so a consumer that applied 1.0.0 before the removal never meets other
// bytes under 1.0.0 after it.
func TestARemovedVersionStaysClaimedOtherBytesAre409AndTheSameBytesLandAgain(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	key := f.instance("acme", "pro", "Plugins/*")
	first := testkit.ModuleArchive(t, "Sec.Base", "1.0.0", 2)
	got := f.do(publishRequest("Sec.Base", "?version=1.0.0", testPublishToken, first))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	landed := decodePublish(t, got)

	_, err := f.served.Remove(t.Context(), "Sec.Base")
	require.NoError(t, err)
	idx, _ := f.index(key)
	require.Empty(t, idx.Bundles, "removed: served to nobody")

	other := testkit.ModuleArchive(t, "Sec.Base", "1.0.0", 3)
	got = f.do(publishRequest("Sec.Base", "?version=1.0.0", testPublishToken, other))
	require.Equal(t, http.StatusConflict, got.status, "%s", got.body)
	assert.Contains(t, string(got.body), landed.SHA256, "the answer names the digest 1.0.0 holds")
	idx, _ = f.index(key)
	assert.Empty(t, idx.Bundles, "the refused bytes are not served")

	// The same bytes again land anew: a new record and generation (the
	// removal gave up the old ones), answered 201, served again with the
	// digest the version always had.
	got = f.do(publishRequest("Sec.Base", "?version=1.0.0", testPublishToken, first))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	again := decodePublish(t, got)
	assert.True(t, again.Created)
	assert.Equal(t, landed.SHA256, again.SHA256)
	assert.NotEqual(t, landed.Generation, again.Generation)
	idx, _ = f.index(key)
	require.Len(t, idx.Bundles, 1)
	assert.Equal(t, landed.SHA256, idx.Bundles[0].SHA256)

	// Control: the same other bytes under a version never published land.
	got = f.do(publishRequest("Sec.Base", "?version=1.0.1", testPublishToken, other))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)

	t.Run("negative control: a removal that gave up the claims lets other bytes take the number", func(t *testing.T) {
		f := newFixture(t, fixtureOptions{})
		require.Equal(t, http.StatusCreated, f.do(publishRequest("Sec.Base", "?version=1.0.0", testPublishToken, first)).status)
		_, err := f.served.Remove(t.Context(), "Sec.Base")
		require.NoError(t, err)
		require.NoError(t, os.RemoveAll(filepath.Join(f.root, modulesDir, "sec.base", "versions")))
		got := f.do(publishRequest("Sec.Base", "?version=1.0.0", testPublishToken, other))
		assert.Equal(t, http.StatusCreated, got.status, "%s", got.body)
		assert.NotEqual(t, landed.SHA256, decodePublish(t, got).SHA256, "1.0.0 now names other bytes")
	})
}
