package registry

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A package that a tier change shows to an entitlement and a later one
// hides again, both after the document a consumer holds, is not named to
// that consumer: its delta's removals are the entries its own document
// listed. Control: a consumer of the same entitlement that held the
// package (it polled while it was shown) gets it as a removal. Before the
// fix the first consumer's delta named B in "removed" though it never held
// it (seen: removed [B] since the first document).
func TestAPackageShownAndHiddenAgainAfterAConsumersDocumentIsNotNamedToIt(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	f.publish("B", "1.0.0", "enterprise")
	offline := f.instance("offline", "free", "Plugins/*")
	steady := f.instance("steady", "free", "Plugins/*") // the same entitlement
	_, at := f.index(offline)
	held := at.header.Get("ETag")

	f.putPackage(packageNode("B", `{"tier":""}`)) // B shown to free
	_, shown := f.index(steady)
	f.publish("A", "2.0.0", "")
	_, both := f.index(steady)
	f.putPackage(packageNode("B", `{"tier":"enterprise"}`)) // hidden again
	_, now := f.index(steady)
	require.NotEqual(t, held, now.header.Get("ETag"))

	d, got := f.delta(offline, held)
	assert.Equal(t, map[string]string{"A": "2.0.0"}, versions(d.Bundles))
	assert.Empty(t, d.Removed, "a package the consumer's document never listed is not named to it")
	assert.NotContains(t, string(got.body), `"B"`)
	assert.Equal(t, now.header.Get("ETag"), got.header.Get("ETag"))

	// Control: a consumer that held B is told it is gone.
	for _, heldB := range []reply{shown, both} {
		d, _ = f.delta(steady, heldB.header.Get("ETag"))
		assert.Equal(t, []string{"B"}, d.Removed, "a package the consumer held and may no longer see is a removal")
	}
	assert.Equal(t, http.StatusNotModified, f.do(request{path: since(now.header.Get("ETag")), key: offline}).status)
}
