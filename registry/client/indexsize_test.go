package client

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/indexdigest"
)

// An index (or delta) whose Content-Length declares more than the client
// reads is refused with a *ResponseError before its body is read: before,
// the client read 64 MiB to find out, every poll, and a body that then
// stalled held the call for the whole attempt timeout (30 s by default).
// Negative control, run by hand: without the declared-size check in
// readIndexBody, the delta call waits on the stalled body until the test's
// bounded context ends it (15 s) with a *TransportError, and ErrorAs
// *ResponseError fails.
func TestAnIndexDeclaringMoreThanTheClientReadsIsRefusedBeforeItsBodyIsRead(t *testing.T) {
	held := Index{Bundles: []IndexEntry{{Plugin: "Acme.Crm", Version: "1.0.0", SHA256: sha256Hex([]byte("x"))}}}
	root := indexdigest.Root([][32]byte{leafOf(held.Bundles[0])})
	heldTag := `"` + hex.EncodeToString(root[:]) + `"`
	srv := newScriptedRegistry(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			writeIndex(w, heldTag, held)
			return
		}
		if r.URL.Query().Get(SinceParam) != "" {
			w.Header().Set(IndexSinceHeader, r.URL.Query().Get(SinceParam))
		}
		w.Header().Set("Content-Length", strconv.Itoa(maxIndexBytes+1))
		_, _ = w.Write([]byte(`{"bundles":[`))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the rest never comes
	})
	c := newTestClient(t, srv.Server, Options{Attempts: 1})

	_, _, err := c.Index(boundedContext(t), "")
	require.NoError(t, err, "control: the first index is read")
	for _, call := range []string{"delta", "whole"} {
		etag := heldTag
		if call == "whole" {
			c.hold(nil) // nothing held: the whole index is asked for
			etag = ""
		}
		_, _, err = c.Index(boundedContext(t), etag)
		var re *ResponseError
		require.ErrorAs(t, err, &re, call)
		assert.Contains(t, re.Reason, "declares "+strconv.Itoa(maxIndexBytes+1)+" bytes", call)
	}
}
