package registry

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/registry/client"
)

func TestAnIfNoneMatchListSplitOverSeveralFieldLinesIsReadWhole(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	key := f.instance("acme", "pro", "Plugins/*")
	f.publish("Acme.Crm", "1.0.0", "")
	_, first := f.index(key)
	etag := first.header.Get("ETag")

	// RFC 9110 §5.3: a list field may come as several field lines (a
	// proxy, or a client naming each cached copy), and means their values
	// joined with commas.
	got := f.do(request{path: client.IndexPath, key: key, header: http.Header{"If-None-Match": {`"an-older-index"`, etag}}})
	assert.Equal(t, http.StatusNotModified, got.status, "the current index is among the tags given")
	assert.Empty(t, got.body)

	// Control: neither line naming the index is a 200.
	got = f.do(request{path: client.IndexPath, key: key, header: http.Header{"If-None-Match": {`"an-older-index"`, `"another"`}}})
	assert.Equal(t, http.StatusOK, got.status)
	// Negative control (run): before the fix only the first line was read,
	// and the first request above was a 200 with the whole index.
}
