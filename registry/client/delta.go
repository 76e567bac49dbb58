package client

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/meshrx/meshrx/internal/indexdigest"
	"github.com/meshrx/meshrx/registry/landing"
)

// heldIndex is the last index a Client fetched and verified: what it asks
// deltas since. A value: replaced, never modified.
type heldIndex struct {
	etag    string
	root    [32]byte
	entries []IndexEntry // in index order (landing.CompareNames of Plugin)
	leaves  [][32]byte   // per entry: indexdigest.Leaf
	tree    *indexdigest.Tree
}

func (h *heldIndex) index() Index { return Index{Bundles: slices.Clone(h.entries)} }

// holdIndex verifies a whole index against its ETag, the root of the
// digest tree over its entries in the order listed, and returns it held.
func holdIndex(idx Index, etag string) (*heldIndex, error) {
	want, ok := etagDigest(etag)
	if !ok {
		return nil, fmt.Errorf("its ETag %q is not an index digest", etag)
	}
	// A copy of its own: the caller is handed idx and may edit it in place,
	// and the leaves kept beside the entries would then verify entries the
	// registry never listed.
	h := &heldIndex{etag: etag, entries: slices.Clone(idx.Bundles), leaves: make([][32]byte, len(idx.Bundles))}
	for i, e := range idx.Bundles {
		h.leaves[i] = leafOf(e)
	}
	h.tree = indexdigest.Build(nil, h.leaves, nil)
	h.root = h.tree.Root()
	if h.root != want {
		return nil, fmt.Errorf("its entries digest to %x, its ETag says %x", h.root, want)
	}
	return h, nil
}

// etagDigest reads the index digest an ETag carries, if it is one.
func etagDigest(etag string) ([32]byte, bool) {
	return parseDigest(strings.Trim(strings.TrimPrefix(strings.TrimSpace(etag), "W/"), `"`))
}

func leafOf(e IndexEntry) [32]byte { return indexdigest.Leaf(e.Plugin, e.Version, e.URL, e.SHA256) }

func parseDigest(s string) ([32]byte, bool) {
	var d [32]byte
	if len(s) != 2*len(d) {
		return d, false
	}
	_, err := hex.Decode(d[:], []byte(s))
	return d, err == nil
}

// apply returns the index d makes of h, verified against d's digest.
func (h *heldIndex) apply(d IndexDelta, etag string) (*heldIndex, error) {
	want, ok := parseDigest(d.Digest)
	if !ok {
		return nil, fmt.Errorf("its digest %q is not an index digest", d.Digest)
	}
	ups := slices.Clone(d.Bundles)
	slices.SortFunc(ups, func(a, b IndexEntry) int { return landing.CompareNames(a.Plugin, b.Plugin) })
	for k := 1; k < len(ups); k++ {
		if landing.CompareNames(ups[k-1].Plugin, ups[k].Plugin) == 0 {
			return nil, fmt.Errorf("it lists plugin %q twice", ups[k].Plugin)
		}
	}
	gone := make(map[string]bool, len(d.Removed))
	for _, name := range d.Removed {
		gone[landing.FoldName(name)] = true
	}
	n := &heldIndex{etag: etag, entries: make([]IndexEntry, 0, len(h.entries)+len(ups)), leaves: make([][32]byte, 0, len(h.entries)+len(ups))}
	clean := make([]bool, 0, cap(n.leaves))
	put := func(e IndexEntry, leaf [32]byte, isClean bool) {
		n.entries = append(n.entries, e)
		n.leaves = append(n.leaves, leaf)
		clean = append(clean, isClean)
	}
	j := 0
	removed := false // an entry held is gone since the last one kept
	for i, e := range h.entries {
		for j < len(ups) && landing.CompareNames(ups[j].Plugin, e.Plugin) < 0 {
			put(ups[j], leafOf(ups[j]), false)
			j++
		}
		if j < len(ups) && landing.CompareNames(ups[j].Plugin, e.Plugin) == 0 {
			put(ups[j], leafOf(ups[j]), false)
			j++
			continue
		}
		if gone[landing.FoldName(e.Plugin)] {
			removed = true
			continue
		}
		put(e, h.leaves[i], !removed)
		removed = false
	}
	for ; j < len(ups); j++ {
		put(ups[j], leafOf(ups[j]), false)
	}
	n.tree = indexdigest.Build(h.tree, n.leaves, func(k int) bool { return clean[k] })
	n.root = n.tree.Root()
	if n.root != want || len(n.entries) != d.Count {
		return nil, fmt.Errorf("applied, it digests to %x (%d entries), the registry says %x (%d)", n.root, len(n.entries), want, d.Count)
	}
	if got, ok := etagDigest(etag); !ok || got != want {
		// An answer without its ETag (or with another): the index is
		// named by its digest, as the registry's ETag names it.
		n.etag = `"` + hex.EncodeToString(want[:]) + `"`
	}
	return n, nil
}

// indexDelta asks for what changed since h. It reports false when the
// registry cannot say (410 Gone) or the delta does not give the index its
// digest names: then the caller fetches the whole index.
func (c *Client) indexDelta(ctx context.Context, h *heldIndex, etag string) (Index, string, error, bool) {
	since := hex.EncodeToString(h.root[:])
	u := c.base.JoinPath(IndexPath)
	u.RawQuery = SinceParam + "=" + since
	resp, attempts, err := c.get(ctx, c.index, u.String(), func(hd http.Header) {
		hd.Set("Accept", "application/json")
	}, http.StatusOK, http.StatusNotModified, http.StatusGone)
	if err != nil {
		return Index{}, "", err, true
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusGone:
		return Index{}, "", nil, false
	case resp.StatusCode == http.StatusNotModified:
		if etag == h.etag {
			return Index{}, etag, ErrNotModified, true
		}
		return h.index(), h.etag, nil, true
	}
	body, err := readIndexBody(resp, u.String(), attempts, "delta")
	if err != nil {
		return Index{}, "", err, true
	}
	tag := resp.Header.Get("ETag")
	var next *heldIndex
	switch from := resp.Header.Get(IndexSinceHeader); {
	case from != "" && from != since:
		// A delta from another base than the one asked for: its body is
		// not the whole index, and applying it here would not give the
		// index its digest names.
		c.logger.Debug("registry: a delta from another index than the one held; fetching the whole index",
			"url", u.String(), "since", from)
		return Index{}, "", nil, false
	case from == "":
		// A registry that does not answer deltas sends the whole index.
		var idx Index
		if err := json.Unmarshal(body, &idx); err != nil {
			return Index{}, "", &ResponseError{URL: u.String(), Reason: "the index is not valid JSON", Err: err}, true
		}
		var err error
		if _, isDigest := etagDigest(tag); !isDigest {
			idx, tag, err = c.accept(u.String(), idx, tag) // nothing to verify
		} else if whole, herr := holdIndex(idx, tag); herr != nil {
			// Not the whole index its digest names: a delta whose header
			// was lost on the way (a proxy that drops headers it does not
			// know) reads so. Failing here would fail every poll; the
			// whole index asked for plainly is verified on its own.
			c.logger.Debug("registry: an answer to a delta request is neither a delta nor the index its ETag names; fetching the whole index",
				"url", u.String(), "error", herr.Error())
			return Index{}, "", nil, false
		} else {
			c.hold(whole)
		}
		if err == nil && etag != "" && tag == etag {
			err = ErrNotModified
		}
		return idx, tag, err, true
	default:
		var d IndexDelta
		if err := json.Unmarshal(body, &d); err != nil {
			return Index{}, "", nil, false
		}
		if next, err = h.apply(d, tag); err != nil {
			c.logger.Debug("registry: a delta did not give the index its digest names; fetching the whole index",
				"url", u.String(), "error", err.Error())
			return Index{}, "", nil, false
		}
	}
	c.hold(next)
	if next.etag == etag {
		return Index{}, etag, ErrNotModified, true
	}
	return next.index(), next.etag, nil, true
}

func (c *Client) held() *heldIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func (c *Client) hold(h *heldIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = h
}
