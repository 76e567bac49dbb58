package registry

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/registry/client"
)

// TestAGrantSpelledWithANonASCIIFoldOfThePackageNameGrantsNothing: a grant
// "Plugins/Demo.Reportſ" (U+017F, which Unicode folds to 's') neither lists
// nor downloads Demo.Reports, whether it was stored before grants were
// checked (written to the mesh directly) or set now (refused). Negative
// control: strings.EqualFold, the comparison grants used, says the two are
// equal; the ASCII spelling of the same grant lists and downloads it.
func TestAGrantSpelledWithANonASCIIFoldOfThePackageNameGrantsNothing(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("Demo.Reports", "1.0.0", "")
	require.True(t, strings.EqualFold("Demo.Reportſ", "Demo.Reports"), "the control: Unicode folding makes them one name")

	for _, spelled := range []string{"Plugins/Demo.Reportſ", "Plugins/Demo.\u212Aeports", "Plugin\u017F/*"} {
		_, err := f.reg.SetGrant(t.Context(), "acme", "test", spelled)
		var bad *auth.GrantEntryError
		assert.ErrorAs(t, err, &bad, "%s is refused", spelled)
	}

	key := f.instance("acme", "enterprise")
	content, err := json.Marshal(map[string]any{"entries": []string{"Plugins/Demo.Reportſ", "Plugin\u017F/*"}, "grantedBy": "before the rule"})
	require.NoError(t, err)
	_, err = f.store.Put(t.Context(), mesh.Node{Path: auth.GrantPath("acme"), NodeType: auth.GrantNodeType, Name: "acme", Content: content})
	require.NoError(t, err)
	f.clk.Advance(time.Minute) // past any cached grant
	idx, _ := f.index(key)
	assert.Empty(t, idx.Bundles, "a stored non-ASCII grant lists nothing")
	got := f.do(request{path: client.BundlesPath + "/Demo.Reports/1.0.0", key: key})
	assert.Equal(t, http.StatusNotFound, got.status, "and downloads nothing: %s", got.body)

	// Control: the ASCII spelling, in another case, grants it.
	_, err = f.reg.SetGrant(t.Context(), "acme", "test", "plugins/DEMO.REPORTS")
	require.NoError(t, err)
	f.clk.Advance(time.Minute)
	idx, _ = f.index(key)
	assert.Equal(t, map[string]string{"Demo.Reports": "1.0.0"}, listed(idx))
	got = f.do(request{path: client.BundlesPath + "/Demo.Reports/1.0.0", key: key})
	assert.Equal(t, http.StatusOK, got.status, "%s", got.body)
}
