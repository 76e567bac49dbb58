package client

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deltaRegistry answers the whole index second (first for the first
// request), and a delta to second since first, through strip: what a proxy
// on the way does to the delta's header. wholes counts the whole-index
// requests after the first; failWholes makes them 500s; wrongDeltas makes
// the delta list another version of the entry it adds (it then does not
// digest to what it says).
type deltaRegistry struct {
	*scriptedRegistry
	wholes      atomic.Int32
	failWholes  atomic.Bool
	wrongDeltas atomic.Bool
}

func newDeltaRegistry(t *testing.T, first, second []IndexEntry, strip func(http.Header)) *deltaRegistry {
	firstTag, secondTag := digestTag(first), digestTag(second)
	d := &deltaRegistry{}
	d.scriptedRegistry = newScriptedRegistry(t, func(n int, w http.ResponseWriter, r *http.Request) {
		since := r.URL.Query().Get(SinceParam)
		switch {
		case since == "" && n == 0:
			writeIndex(w, firstTag, Index{Bundles: first})
		case since == "":
			d.wholes.Add(1)
			if d.failWholes.Load() {
				http.Error(w, `{"error":"down"}`, http.StatusInternalServerError)
				return
			}
			writeIndex(w, secondTag, Index{Bundles: second})
		default:
			w.Header().Set("ETag", secondTag)
			w.Header().Set(IndexSinceHeader, since)
			strip(w.Header())
			added := second[len(second)-1]
			if d.wrongDeltas.Load() {
				added.Version = "9.9.9"
			}
			_ = json.NewEncoder(w).Encode(IndexDelta{Since: since, Digest: strings.Trim(secondTag, `"`), Count: len(second),
				Bundles: []IndexEntry{added}})
		}
	})
	return d
}

// A delta whose X-Index-Since header was lost on the way (a proxy that
// drops headers it does not know) reads as a whole index that does not
// digest to its ETag: the client fetches the whole index instead of
// failing every poll. Control: with the header kept the delta is applied
// and no whole index is fetched. Before the fix every poll failed with
// "the index does not match its digest" and the client never caught up.
func TestADeltaThatLostItsHeaderFallsBackToTheWholeIndex(t *testing.T) {
	first := []IndexEntry{entry("Acme.A", "1.0.0"), entry("Acme.B", "1.0.0")}
	second := append(slices.Clone(first), entry("Acme.C", "1.0.0"))
	for _, lost := range []bool{false, true} {
		reg := newDeltaRegistry(t, first, second, func(h http.Header) {
			if lost {
				h.Del(IndexSinceHeader)
			}
		})
		c := newTestClient(t, reg.Server, Options{})
		_, tag, err := c.Index(boundedContext(t), "")
		require.NoError(t, err)
		idx, tag, err := c.Index(boundedContext(t), tag)
		require.NoError(t, err, "header lost: %v", lost)
		assert.Equal(t, second, idx.Bundles)
		assert.Equal(t, digestTag(second), tag)
		want := int32(0)
		if lost {
			want = 1
		}
		assert.Equal(t, want, reg.wholes.Load(), "header lost %v: whole indexes fetched after the first", lost)
		require.NotNil(t, c.held())
		assert.Equal(t, digestTag(second), c.held().etag)
	}
}

// A delta that does not digest to what the registry says, whose fallback
// whole-index fetch fails too, leaves the client holding the index it
// verified last, not the wrong one: the poll is an error, and the next
// poll asks since the verified index and catches up with one delta, no
// whole index fetched. Negative control (run): with apply's digest check
// left out, the wrong delta is taken and the poll does not fail.
func TestAWrongDeltaWhoseFallbackFailsKeepsTheVerifiedIndex(t *testing.T) {
	first := []IndexEntry{entry("Acme.A", "1.0.0"), entry("Acme.B", "1.0.0")}
	second := append(slices.Clone(first), entry("Acme.C", "1.0.0"))
	reg := newDeltaRegistry(t, first, second, func(http.Header) {})
	reg.wrongDeltas.Store(true)
	reg.failWholes.Store(true)
	c := newTestClient(t, reg.Server, Options{Attempts: 1})
	_, tag, err := c.Index(boundedContext(t), "")
	require.NoError(t, err)
	firstTag := tag

	_, _, err = c.Index(boundedContext(t), tag)
	require.Error(t, err, "a wrong delta and a failed whole index")
	require.NotNil(t, c.held())
	assert.Equal(t, firstTag, c.held().etag, "the verified index is still held")
	assert.Equal(t, first, c.held().entries)

	reg.wrongDeltas.Store(false)
	reg.failWholes.Store(false)
	before := reg.wholes.Load()
	idx, tag, err := c.Index(boundedContext(t), tag)
	require.NoError(t, err)
	assert.Equal(t, second, idx.Bundles)
	assert.Equal(t, digestTag(second), tag)
	assert.Equal(t, before, reg.wholes.Load(), "control: the next poll is one delta since the verified index")
}
