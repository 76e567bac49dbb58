package registry

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

func publishRequest(plugin, query, token string, body []byte) request {
	r := request{method: http.MethodPost, path: client.BundlesPath + "/" + plugin + query, body: body, header: http.Header{}}
	if token != "" {
		r.header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// activation is the authoritative list on the fixture's volume.
func (f *fixture) activation() map[string]string {
	f.t.Helper()
	act, err := f.landing.Activation(f.t.Context())
	require.NoError(f.t, err)
	return servedVersions(act)
}

func TestPublishingNeedsThePublishToken(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	archive := testkit.ModuleArchive(t, "Acme.Crm", "1.0.0", 2)
	for name, token := range map[string]string{"no token": "", "wrong token": "publish-token-for-test", "longer token": testPublishToken + "x"} {
		got := f.do(publishRequest("Acme.Crm", "?version=1.0.0", token, archive))
		assert.Equal(t, http.StatusUnauthorized, got.status, name)
		assert.Equal(t, "Bearer", got.header.Get("WWW-Authenticate"), name)
	}
	assert.Empty(t, f.activation(), "a refused publication lands nothing")

	// An instance key is not a publish token.
	key := f.instance("acme", "enterprise", "Plugins/*")
	assert.Equal(t, http.StatusUnauthorized, f.do(publishRequest("Acme.Crm", "?version=1.0.0", key, archive)).status)

	got := f.do(publishRequest("Acme.Crm", "?version=1.0.0&tier=Pro", testPublishToken, archive))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	var rec landing.Record
	require.NoError(t, json.Unmarshal(got.body, &rec))
	assert.Equal(t, "Acme.Crm", rec.Module)
	assert.Equal(t, "1.0.0", rec.Version)
	assert.Equal(t, landing.Landed, rec.State)
	assert.Equal(t, client.BundlesPath+"/Acme.Crm/1.0.0", got.header.Get("Location"))
	assert.Equal(t, map[string]string{"Acme.Crm": "1.0.0"}, f.activation())

	node, err := rx.First(t.Context(), f.store.Get(packageNodePath(DefaultSource, "Acme.Crm")))
	require.NoError(t, err)
	assert.Equal(t, PackageNodeType, node.NodeType)
	assert.JSONEq(t, `{"tier":"pro"}`, string(node.Content), "the tier is stored in canonical form")
}

func TestPublishingIsNotMappedWithoutAToken(t *testing.T) {
	f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) { o.PublishToken = "" }})
	got := f.do(publishRequest("Acme.Crm", "?version=1.0.0", "", testkit.ModuleArchive(t, "Acme.Crm", "1.0.0", 1)))
	assert.Equal(t, http.StatusNotFound, got.status, "no route takes a publication")
	assert.Empty(t, f.activation())
}

func TestAnUploadOverTheLimitIs413AndLandsNothing(t *testing.T) {
	archive := testkit.ModuleArchive(t, "Acme.Crm", "1.0.0", 4)
	f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) { o.MaxPublishBytes = int64(len(archive)) - 1 }})
	got := f.do(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, archive))
	assert.Equal(t, http.StatusRequestEntityTooLarge, got.status)
	assert.Equal(t, "application/json", got.header.Get("Content-Type"))
	var body struct{ Error string }
	require.NoError(t, json.Unmarshal(got.body, &body))
	assert.Contains(t, body.Error, "larger than")
	assert.Empty(t, f.activation())

	// Control: one byte less is accepted, so the limit is what refused.
	small := testkit.ModuleArchive(t, "Acme.Crm", "1.0.0", 3)
	require.Less(t, len(small), len(archive))
	assert.Equal(t, http.StatusCreated, f.do(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, small)).status)
}

func TestABadPublicationIs400WithTheReasonAndLandsNothing(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	good := testkit.ModuleArchive(t, "Acme.Crm", "1.0.0", 1)
	for name, c := range map[string]struct {
		plugin, query string
		body          []byte
		says          string
	}{
		"not a zip":            {"Acme.Crm", "?version=1.0.0", []byte("this is not a zip archive"), "archive"},
		"empty body":           {"Acme.Crm", "?version=1.0.0", []byte{}, "archive"},
		"unsafe entry":         {"Acme.Crm", "?version=1.0.0", testkit.Zip(t, testkit.Entry{Name: "../evil.txt", Body: []byte("x")}), "archive"},
		"no version":           {"Acme.Crm", "", good, "version"},
		"traversal version":    {"Acme.Crm", "?version=..%2f..", good, "version"},
		"traversal plugin":     {"..%2fetc", "?version=1.0.0", good, "module"},
		"bad tier":             {"Acme.Crm", "?version=1.0.0&tier=pro%2fx", good, "tier"},
		"tier with a wildcard": {"Acme.Crm", "?version=1.0.0&tier=*", good, "tier"},
	} {
		got := f.do(publishRequest(c.plugin, c.query, testPublishToken, c.body))
		assert.Equal(t, http.StatusBadRequest, got.status, "%s: %s", name, got.body)
		var body struct{ Error string }
		require.NoError(t, json.Unmarshal(got.body, &body), name)
		assert.Contains(t, body.Error, c.says, name)
	}
	assert.Empty(t, f.activation())
}

func TestRepublishingWithoutATierKeepsThePackagesTier(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	require.Equal(t, http.StatusCreated, f.do(publishRequest("Acme.Crm", "?version=1.0.0&tier=enterprise", testPublishToken, testkit.ModuleArchive(t, "Acme.Crm", "1.0.0", 1))).status)
	require.Equal(t, http.StatusCreated, f.do(publishRequest("Acme.Crm", "?version=1.1.0", testPublishToken, testkit.ModuleArchive(t, "Acme.Crm", "1.1.0", 1))).status)
	node, err := rx.First(t.Context(), f.store.Get(packageNodePath(DefaultSource, "Acme.Crm")))
	require.NoError(t, err)
	assert.JSONEq(t, `{"tier":"enterprise"}`, string(node.Content), "republishing must not widen the licence")

	// And a pro instance still does not see it.
	key := f.instance("acme", "pro", "Plugins/*")
	idx, _ := f.index(key)
	assert.Empty(t, idx.Bundles)

	// Control: a new package published without a tier is at the baseline.
	require.Equal(t, http.StatusCreated, f.do(publishRequest("Acme.Free", "?version=1.0.0", testPublishToken, testkit.ModuleArchive(t, "Acme.Free", "1.0.0", 1))).status)
	idx, _ = f.index(key)
	assert.Equal(t, map[string]string{"Acme.Free": "1.0.0"}, listed(idx))
}
