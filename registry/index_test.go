package registry

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

func TestAnIndexRequestWithoutAKeyIs401AndReadsNothing(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.instance("acme", "pro", "Plugins/*")
	f.publish("Acme.Crm", "1.0.0", "")

	for _, header := range []string{"", "Bearer", "Bearer not-a-key", "Basic !!!", "Bearer mwi_short"} {
		gets, queries := f.mesh.reads()
		got := f.do(request{path: client.IndexPath, header: http.Header{"Authorization": {header}}})
		assert.Equal(t, http.StatusUnauthorized, got.status, "header %q", header)
		assert.Equal(t, "Bearer", got.header.Get("WWW-Authenticate"))
		g2, q2 := f.mesh.reads()
		assert.Equal(t, gets, g2, "header %q: the 401 path must not read the mesh", header)
		assert.Equal(t, queries, q2, "header %q: the 401 path must not query the mesh", header)
	}

	// Negative control: a well-formed key that is not registered is also a
	// 401, but only after reading its index node, which the counter sees.
	// A counter that could not see reads would pass the loop above anyway.
	unknown := f.instance("other", "pro", "Plugins/*")
	require.NoError(t, f.reg.RevokeKey(t.Context(), "other", unknown))
	gets, _ := f.mesh.reads()
	got := f.do(request{path: client.IndexPath, key: unknown})
	assert.Equal(t, http.StatusUnauthorized, got.status)
	g2, _ := f.mesh.reads()
	assert.Greater(t, g2, gets, "an authenticated-looking key is checked against the mesh")
}

func TestAGrantedKeyListsExactlyItsGrantedPackages(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	crm, _ := f.publish("Acme.Crm", "1.2.0", "")
	f.publish("Acme.Billing", "3.0.1", "")
	f.publish("Acme.Secret", "0.9.0", "")
	narrow := f.instance("narrow", "enterprise", "Plugins/Acme.Crm", "Plugins/Acme.Billing")
	wide := f.instance("wide", "enterprise", "Plugins/*")
	none := f.instance("none", "enterprise")

	idx, _ := f.index(narrow)
	assert.Equal(t, map[string]string{"Acme.Crm": "1.2.0", "Acme.Billing": "3.0.1"}, listed(idx),
		"an ungranted package is absent")
	for _, b := range idx.Bundles {
		if b.Plugin == "Acme.Crm" {
			assert.Equal(t, crm.SHA256, b.SHA256)
			assert.Equal(t, client.BundlesPath+"/Acme.Crm/1.2.0", b.URL, "relative: no public URL is configured")
		}
	}

	// Control: Acme.Secret is landed and served; a wider grant lists it.
	idx, _ = f.index(wide)
	assert.Equal(t, map[string]string{"Acme.Crm": "1.2.0", "Acme.Billing": "3.0.1", "Acme.Secret": "0.9.0"}, listed(idx))

	// Registering is identity, not entitlement: no grant, no packages.
	idx, got := f.index(none)
	assert.Empty(t, idx.Bundles)
	assert.JSONEq(t, `{"bundles":[]}`, string(got.body), "an empty index is an empty list, not null")
}

func TestAPlanScopedGrantListsOnlyTheTiersBothPlansCover(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("Base", "1.0.0", "")
	f.publish("Free", "1.0.0", "free")
	f.publish("Pro", "1.0.0", "pro")
	f.publish("Enterprise", "1.0.0", "enterprise")
	f.publish("Mystery", "1.0.0", "platinum") // a tier the ladder does not know

	cases := []struct {
		instancePlan string
		grant        []string
		want         []string
	}{
		// The entry's plan caps what the grant covers.
		{"enterprise", []string{"Plugins/*@pro"}, []string{"Base", "Free", "Pro"}},
		// The instance's own plan caps it as well.
		{"free", []string{"Plugins/*@pro"}, []string{"Base", "Free"}},
		// A plan-less entry is capped by the instance's plan alone.
		{"enterprise", []string{"Plugins/*"}, []string{"Base", "Free", "Pro", "Enterprise"}},
		// An unknown plan on the entry licenses nothing.
		{"enterprise", []string{"Plugins/*@gold"}, []string{}},
	}
	for i, c := range cases {
		key := f.instance("inst"+string(rune('a'+i)), c.instancePlan, c.grant...)
		idx, _ := f.index(key)
		got := []string{}
		for _, b := range idx.Bundles {
			got = append(got, b.Plugin)
		}
		assert.ElementsMatch(t, c.want, got, "instance on %s with %v", c.instancePlan, c.grant)
		assert.NotContains(t, got, "Mystery", "an unknown package tier is covered by nothing")
	}
}

func TestAnUnchangedIndexAnswers304ToItsOwnETag(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("Acme.Crm", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	_, first := f.index(key)
	etag := first.header.Get("ETag")
	require.Regexp(t, `^"[0-9a-f]{64}"$`, etag, "a strong ETag")

	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		got := f.do(request{path: client.IndexPath, key: key, header: http.Header{"If-None-Match": {inm}}})
		assert.Equal(t, http.StatusNotModified, got.status, "If-None-Match %s", inm)
		assert.Empty(t, got.body, "a 304 has no body")
		assert.Equal(t, etag, got.header.Get("ETag"))
	}
	// Control: another tag gets the document again.
	got := f.do(request{path: client.IndexPath, key: key, header: http.Header{"If-None-Match": {`"0000"`}}})
	assert.Equal(t, http.StatusOK, got.status)
	assert.Equal(t, first.body, got.body)
}

func TestANewPublicationChangesTheETagAndIsListedAtOnceOnThisReplica(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("Acme.Crm", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	_, before := f.index(key)

	// Another replica's landing on the same volume is not listed while the
	// snapshot is fresh (the virtual clock does not move): the index did not
	// rescan. This is the control for "at once" below being the local
	// write's invalidation rather than a scan per request.
	other := newLanding(t, landing.DirVolume(f.root), landing.Options{Replica: "other"})
	_, err := other.Land(t.Context(), "Acme.Billing", "1.0.0", testkit.ModuleArchive(t, "Acme.Billing", "1.0.0", 1))
	require.NoError(t, err)
	idx, same := f.index(key)
	assert.Equal(t, map[string]string{"Acme.Crm": "1.0.0"}, listed(idx))
	assert.Equal(t, before.header.Get("ETag"), same.header.Get("ETag"))

	got := f.do(request{method: http.MethodPost, path: client.BundlesPath + "/Acme.Crm?version=1.1.0",
		header: http.Header{"Authorization": {"Bearer " + testPublishToken}}, body: testkit.ModuleArchive(t, "Acme.Crm", "1.1.0", 2)})
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)

	idx, after := f.index(key)
	assert.Equal(t, "1.1.0", listed(idx)["Acme.Crm"], "this replica serves its own publication on its next read")
	assert.NotEqual(t, before.header.Get("ETag"), after.header.Get("ETag"))
	stale := f.do(request{path: client.IndexPath, key: key, header: http.Header{"If-None-Match": {before.header.Get("ETag")}}})
	assert.Equal(t, http.StatusOK, stale.status, "the old ETag no longer matches")
}

func TestTheIndexIsAssembledOncePerEntitlementNotPerRequest(t *testing.T) {
	const requests = 100
	run := func(t *testing.T) (*fixture, int64) {
		f := newFixture(t, fixtureOptions{})
		for _, m := range []string{"A", "B", "C"} {
			f.publish(m, "1.0.0", "")
		}
		key := f.instance("acme", "pro", "Plugins/*")
		var wg sync.WaitGroup
		bodies := make([]string, requests)
		for i := range requests {
			wg.Go(func() {
				got := testkit.Receive(t, f.send(request{path: client.IndexPath, key: key}), "an index answer")
				if assert.NoError(t, got.err) && assert.Equal(t, http.StatusOK, got.status) {
					bodies[i] = string(got.body)
				}
			})
		}
		wg.Wait()
		for _, b := range bodies {
			assert.Equal(t, bodies[0], b, "every request gets the same document")
		}
		return f, f.server.index.assemblies.Load()
	}

	t.Run("served", func(t *testing.T) {
		f, assembled := run(t)
		assert.EqualValues(t, 1, assembled, "one assembly for %d requests of one entitlement", requests)
		assert.EqualValues(t, 1, f.served.Derivations(), "one derivation for %d requests", requests)

		// Another entitlement gets its own document, once.
		other := f.instance("other", "pro", "Plugins/A")
		for range 3 {
			idx, _ := f.index(other)
			assert.Equal(t, map[string]string{"A": "1.0.0"}, listed(idx))
		}
		assert.EqualValues(t, 2, f.server.index.assemblies.Load())
	})

	// Negative control: with room for one document, two entitlements taking
	// turns evict each other and every request assembles, so the counter
	// above does count per request.
	t.Run("a cache of one document and two entitlements taking turns", func(t *testing.T) {
		f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) { o.IndexCacheSize = 1 }})
		for _, m := range []string{"A", "B", "C"} {
			f.publish(m, "1.0.0", "")
		}
		keys := []string{f.instance("acme", "pro", "Plugins/*"), f.instance("other", "pro", "Plugins/A")}
		const turns = 10
		for i := range turns {
			_, got := f.index(keys[i%2])
			require.Equal(t, http.StatusOK, got.status)
		}
		assert.EqualValues(t, turns, f.server.index.assemblies.Load())
	})
}

func TestAnEntitlementChangeIsServedOnTheNextRequest(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	f.publish("B", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/A")
	idx, _ := f.index(key)
	assert.Equal(t, map[string]string{"A": "1.0.0"}, listed(idx))

	_, err := f.reg.SetGrant(t.Context(), "acme", "test", "Plugins/A", "Plugins/B")
	require.NoError(t, err)
	idx, _ = f.index(key)
	assert.Equal(t, map[string]string{"A": "1.0.0", "B": "1.0.0"}, listed(idx), "the document is keyed by the entitlement")
}

func TestETagMatchingFollowsIfNoneMatch(t *testing.T) {
	const tag = `"abc"`
	for header, want := range map[string]bool{
		"": false, `"abc"`: true, `W/"abc"`: true, ` "x" , "abc" `: true, "*": true, `"abd"`: false, `abc`: false,
	} {
		assert.Equal(t, want, etagMatches(header, tag), "If-None-Match %q", header)
	}
}

// settle waits, at most bound, for the served activation's derivation in
// flight, if any, to be published.
func (f *fixture) settle() {
	f.t.Helper()
	if d := f.served.inflight.Current(); d != nil {
		ctx, cancel := context.WithTimeout(f.t.Context(), testkit.Bound)
		defer cancel()
		_, err := rx.First(ctx, d.Result())
		require.NoError(f.t, err)
	}
}

func TestARederivationThatFindsNothingNewKeepsTheAssembledIndex(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	// B's package node exists before another replica lands B below.
	f.putPackage(packageNode("B", `{"tier":""}`))
	key := f.instance("acme", "pro", "Plugins/*")
	_, first := f.index(key)
	require.EqualValues(t, 1, f.served.Derivations())

	// Past the freshness bound a read starts a re-derivation; it finds the
	// same records.
	f.clk.Advance(f.served.Freshness())
	f.index(key)
	f.settle()
	_, again := f.index(key)
	require.EqualValues(t, 2, f.served.Derivations())
	assert.EqualValues(t, 1, f.server.index.assemblies.Load(), "the same content is not assembled again")
	assert.Equal(t, first.header.Get("ETag"), again.header.Get("ETag"))

	// Control: a re-derivation that finds another replica's landing does
	// assemble again, and lists it.
	other := newLanding(t, landing.DirVolume(f.root), landing.Options{Replica: "other"})
	_, err := other.Land(t.Context(), "B", "1.0.0", testkit.ModuleArchive(t, "B", "1.0.0", 1))
	require.NoError(t, err)
	f.clk.Advance(f.served.Freshness())
	f.index(key)
	f.settle()
	idx, _ := f.index(key)
	assert.Equal(t, map[string]string{"A": "1.0.0", "B": "1.0.0"}, listed(idx))
	assert.EqualValues(t, 2, f.server.index.assemblies.Load())
}
