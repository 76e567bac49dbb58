package client

import (
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/indexdigest"
)

// A whole index whose entries do not digest to its ETag is refused, and
// the client holds nothing to ask deltas since; control: the same index
// under its true digest is accepted and held.
func TestAWholeIndexThatDoesNotMatchItsDigestIsRefused(t *testing.T) {
	root := indexdigest.Root([][32]byte{leafOf(demoIndex.Bundles[0])})
	good := `"` + hex.EncodeToString(root[:]) + `"`
	wrong := `"` + hex.EncodeToString(make([]byte, 32)) + `"`
	tag := wrong
	reg := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, r *http.Request) { writeIndex(w, tag, demoIndex) })
	c := newTestClient(t, reg.Server, Options{})
	_, _, err := c.Index(boundedContext(t), "")
	var re *ResponseError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, err.Error(), "does not match its digest")
	assert.Nil(t, c.held(), "nothing is held")

	tag = good
	idx, got, err := c.Index(boundedContext(t), "")
	require.NoError(t, err)
	assert.Equal(t, good, got)
	assert.Equal(t, demoIndex, idx)
	require.NotNil(t, c.held())
	assert.Equal(t, root, c.held().root)
}
