package registry

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/registry/client"
)

// A consumer whose entitlement's history was dropped (more entitlements
// polled than the cache keeps) while its document is still the one kept
// for the current generation is answered 304 to its delta, not 410: a 410
// there made every poll of the generation two requests (the 410, then a
// whole-index request answered 304), since nothing assembled a document
// again to start a new history. Control: the same poll is a 304 before the
// third entitlement pushes the history out. Before the fix: 410.
func TestADeltaSinceTheKeptDocumentIsNotModifiedAfterItsHistoryWasDropped(t *testing.T) {
	f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) { o.IndexCacheSize = 2 }})
	f.publish("A", "1.0.0", "")
	f.publish("B", "1.0.0", "")
	e1 := f.instance("one", "pro", "Plugins/*")
	e2 := f.instance("two", "pro", "Plugins/A")
	e3 := f.instance("three", "pro", "Plugins/B")
	_, at1 := f.index(e1)
	_, at2 := f.index(e2)
	assert.Equal(t, http.StatusNotModified, f.do(request{path: since(at2.header.Get("ETag")), key: e2}).status, "control: the history holds it")
	// e1's history is used after e2's: the least recently used is e2's,
	// while the documents kept are dropped oldest first (e1's).
	require.Equal(t, http.StatusNotModified, f.do(request{path: since(at1.header.Get("ETag")), key: e1}).status)
	_, _ = f.index(e3)

	got := f.do(request{path: since(at2.header.Get("ETag")), key: e2})
	assert.Equal(t, http.StatusNotModified, got.status, "the document kept for the consumer is the one it holds: %s", got.body)
	c, counted := f.consumer(e2)
	_, tag, err := indexVia(t, c, "")
	require.NoError(t, err)
	for range 3 {
		_, tag, err = indexVia(t, c, tag)
		require.ErrorIs(t, err, client.ErrNotModified)
	}
	deltas, fulls := counted.requests()
	assert.Equal(t, [2]int64{3, 1}, [2]int64{deltas, fulls}, "one request per poll")
}
