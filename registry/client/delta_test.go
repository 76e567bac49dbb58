package client

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
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

// digestTag is the ETag a registry sends for an index of entries.
func digestTag(entries []IndexEntry) string {
	leaves := make([][32]byte, len(entries))
	for i, e := range entries {
		leaves[i] = leafOf(e)
	}
	root := indexdigest.Root(leaves)
	return `"` + hex.EncodeToString(root[:]) + `"`
}

func entry(plugin, version string) IndexEntry {
	return IndexEntry{Plugin: plugin, Version: version, URL: "/api/plugins/bundles/" + plugin + "/" + version,
		SHA256: "0000000000000000000000000000000000000000000000000000000000000000"[:60] + version[:1] + "abc"}
}

// A caller that filters the index it was handed in place (slices.DeleteFunc,
// the idiomatic way) does not change what the Client holds: the next delta
// is applied to the index the registry sent. Control: with holdIndex keeping
// the caller's slice (as main did), the delta "adds D" verified against the
// entries' cached leaves and returned B, C, an all-blank entry and D (A
// gone, a blank entry the registry never listed).
func TestAnIndexTheCallerEditsInPlaceDoesNotChangeTheNextDelta(t *testing.T) {
	first := []IndexEntry{entry("Acme.A", "1.0.0"), entry("Acme.B", "1.0.0"), entry("Acme.C", "1.0.0")}
	second := append(slices.Clone(first), entry("Acme.D", "1.0.0"))
	firstTag, secondTag := digestTag(first), digestTag(second)
	reg := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		since := r.URL.Query().Get(SinceParam)
		if since == "" {
			writeIndex(w, firstTag, Index{Bundles: slices.Clone(first)})
			return
		}
		w.Header().Set("ETag", secondTag)
		w.Header().Set(IndexSinceHeader, since)
		_ = json.NewEncoder(w).Encode(IndexDelta{Since: since, Digest: strings.Trim(secondTag, `"`), Count: len(second),
			Bundles: []IndexEntry{entry("Acme.D", "1.0.0")}})
	})
	c := newTestClient(t, reg.Server, Options{})
	idx, tag, err := c.Index(boundedContext(t), "")
	require.NoError(t, err)
	require.Equal(t, firstTag, tag)
	idx.Bundles = slices.DeleteFunc(idx.Bundles, func(e IndexEntry) bool { return e.Plugin == "Acme.A" })

	idx, tag, err = c.Index(boundedContext(t), tag)
	require.NoError(t, err)
	assert.Equal(t, secondTag, tag)
	assert.Equal(t, second, idx.Bundles, "the index the registry lists")
	assert.Equal(t, 2, reg.requests(), "one whole index, one delta")
}

// A delta from another base than the one asked for (its IndexSinceHeader
// names another digest: a confused replica or cache) is not read as a whole
// index: the Client fetches the whole index and returns it. Control: on
// main the delta's body was decoded as an Index (its few changed entries)
// and refused as "the index does not match its digest", failing every poll
// while the registry kept answering so.
func TestADeltaFromAnotherBaseFallsBackToTheWholeIndex(t *testing.T) {
	first := []IndexEntry{entry("Acme.A", "1.0.0"), entry("Acme.B", "1.0.0")}
	second := append(slices.Clone(first), entry("Acme.C", "1.0.0"))
	firstTag, secondTag := digestTag(first), digestTag(second)
	other := strings.Repeat("ab", 32)
	var wholes atomic.Int32
	reg := newScriptedRegistry(t, func(n int, w http.ResponseWriter, r *http.Request) {
		since := r.URL.Query().Get(SinceParam)
		switch {
		case since == "" && n == 0:
			writeIndex(w, firstTag, Index{Bundles: first})
		case since == "":
			wholes.Add(1)
			writeIndex(w, secondTag, Index{Bundles: second})
		default:
			w.Header().Set("ETag", secondTag)
			w.Header().Set(IndexSinceHeader, other)
			_ = json.NewEncoder(w).Encode(IndexDelta{Since: other, Digest: strings.Trim(secondTag, `"`), Count: len(second),
				Bundles: []IndexEntry{entry("Acme.C", "1.0.0")}})
		}
	})
	c := newTestClient(t, reg.Server, Options{})
	_, tag, err := c.Index(boundedContext(t), "")
	require.NoError(t, err)

	idx, tag, err := c.Index(boundedContext(t), tag)
	require.NoError(t, err)
	assert.Equal(t, secondTag, tag)
	assert.Equal(t, second, idx.Bundles)
	assert.Equal(t, int32(1), wholes.Load(), "the delta, then the whole index")
	require.NotNil(t, c.held())
	assert.Equal(t, secondTag, c.held().etag)
}

// A caller that passes no ETag asks for the index unconditionally and gets
// it, even when a delta answer carried no ETag (a proxy that strips it):
// the Client names what it holds by the delta's digest. Control: on main
// the held index took the missing ETag, "", and the caller's "" matched it:
// Index returned ErrNotModified to a caller that had asked for the index.
func TestACallerWithoutAnETagIsNeverToldNotModified(t *testing.T) {
	first := []IndexEntry{entry("Acme.A", "1.0.0")}
	second := append(slices.Clone(first), entry("Acme.B", "1.0.0"))
	firstTag, secondTag := digestTag(first), digestTag(second)
	reg := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		since := r.URL.Query().Get(SinceParam)
		if since == "" {
			writeIndex(w, firstTag, Index{Bundles: first})
			return
		}
		w.Header().Set(IndexSinceHeader, since)
		_ = json.NewEncoder(w).Encode(IndexDelta{Since: since, Digest: strings.Trim(secondTag, `"`), Count: len(second),
			Bundles: []IndexEntry{entry("Acme.B", "1.0.0")}})
	})
	c := newTestClient(t, reg.Server, Options{})
	_, _, err := c.Index(boundedContext(t), "")
	require.NoError(t, err)

	idx, tag, err := c.Index(boundedContext(t), "")
	require.NoError(t, err)
	assert.Equal(t, second, idx.Bundles)
	assert.Equal(t, secondTag, tag, "named by its digest")

	_, tag, err = c.Index(boundedContext(t), tag)
	assert.ErrorIs(t, err, ErrNotModified, "control: the ETag it was given is not modified")
	assert.Equal(t, secondTag, tag)
}

// After a 410 Gone (the registry no longer answers since the index the
// Client holds) the whole index it fetches replaces the one held, even when
// the caller's etag already names the registry's index (a caller that
// learned it from another Client or an earlier run): the next poll is one
// request, a delta answered 304. Control: on main (8872fbd) the fallback
// asked with If-None-Match, got 304 and kept the outdated index held ("the
// index fetched after the 410 is held" failed: the first index's digest),
// and the third poll cost a refused delta and a 304 again (5 requests, not 4).
func TestAGoneDeltaThenAFullFetchReplacesTheHeldIndex(t *testing.T) {
	first := []IndexEntry{entry("Acme.A", "1.0.0")}
	second := append(slices.Clone(first), entry("Acme.B", "1.0.0"))
	firstTag, secondTag := digestTag(first), digestTag(second)
	var current atomic.Pointer[string]
	current.Store(&firstTag)
	reg := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		cur := *current.Load()
		idx := Index{Bundles: first}
		if cur == secondTag {
			idx = Index{Bundles: second}
		}
		switch since := r.URL.Query().Get(SinceParam); {
		case since == strings.Trim(cur, `"`):
			w.WriteHeader(http.StatusNotModified)
		case since != "":
			// A registry that keeps no history: it can say only
			// "unchanged" or "gone".
			w.WriteHeader(http.StatusGone)
		case r.Header.Get("If-None-Match") == cur:
			w.WriteHeader(http.StatusNotModified)
		default:
			writeIndex(w, cur, idx)
		}
	})
	c := newTestClient(t, reg.Server, Options{})
	_, tag, err := c.Index(boundedContext(t), "")
	require.NoError(t, err)
	require.Equal(t, firstTag, tag)
	require.Equal(t, 1, reg.requests())

	current.Store(&secondTag)
	_, tag, err = c.Index(boundedContext(t), secondTag)
	require.ErrorIs(t, err, ErrNotModified, "the caller's etag names the registry's index")
	assert.Equal(t, secondTag, tag)
	assert.Equal(t, 3, reg.requests(), "a refused delta and the whole index")
	require.NotNil(t, c.held())
	assert.Equal(t, secondTag, c.held().etag, "the index fetched after the 410 is held")

	_, tag, err = c.Index(boundedContext(t), secondTag)
	require.ErrorIs(t, err, ErrNotModified)
	assert.Equal(t, secondTag, tag)
	assert.Equal(t, 4, reg.requests(), "the next poll is one request: a delta since the index held, 304")
}
