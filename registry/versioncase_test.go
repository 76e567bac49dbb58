package registry

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/client"
)

// TestVersionsDifferingOnlyInCaseAreOneVersionForClaimsRecordsAndDownloads:
// 2.0.0-RC1 is published; then 2.0.0-rc1 with the same bytes is the same
// version (200, answered with the first spelling), not a new record;
// downloads in either spelling serve it; other bytes under a third spelling
// are 409. Negative control: before the rule was one, the claim folded case
// but the records and downloads compared bytes exactly, so 2.0.0-rc1
// landed as a new record (201), after which 2.0.0-RC1 answered 200
// "already published" while downloading it was a 404.
func TestVersionsDifferingOnlyInCaseAreOneVersionForClaimsRecordsAndDownloads(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	archive := testkit.ModuleArchive(t, "Acme.Rc", "2.0.0-RC1", 1)
	first := f.do(publishRequest("Acme.Rc", "?version=2.0.0-RC1", testPublishToken, archive))
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)

	again := f.do(publishRequest("Acme.Rc", "?version=2.0.0-rc1", testPublishToken, archive))
	require.Equal(t, http.StatusOK, again.status, "the same bytes under another case are the same version: %s", again.body)
	assert.False(t, decodePublish(t, again).Created)
	assert.Equal(t, "2.0.0-RC1", decodePublish(t, again).Version, "the version keeps its first spelling")
	assert.Equal(t, decodePublish(t, first).ID, decodePublish(t, again).ID, "no second record")

	key := f.instance("acme", "free", "Plugins/*")
	for _, v := range []string{"2.0.0-RC1", "2.0.0-rc1", "2.0.0-Rc1"} {
		got := f.do(request{path: client.BundlesPath + "/Acme.Rc/" + v, key: key})
		require.Equal(t, http.StatusOK, got.status, "download %s: %s", v, got.body)
		assert.True(t, bytes.Equal(archive, got.body), "download %s", v)
	}
	other := f.do(publishRequest("Acme.Rc", "?version=2.0.0-Rc1", testPublishToken, testkit.ModuleArchive(t, "Acme.Rc", "other", 2)))
	assert.Equal(t, http.StatusConflict, other.status, "other bytes under a third spelling: %s", other.body)
	assert.Equal(t, map[string]string{"Acme.Rc": "2.0.0-RC1"}, f.activation())
}
