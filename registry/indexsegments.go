package registry

import (
	"io"
	"slices"
	"sort"

	"github.com/meshrx/meshrx/internal/indexdigest"
	"github.com/meshrx/meshrx/registry/landing"
)

// An index document's body is kept as segments: the listed entries cut
// where the digest tree cuts its leaves into level-0 chunks
// (indexdigest.EndsChunk), one immutable byte slice per chunk. A
// publication re-encodes the entries it changed and rebuilds the segments
// they fall in (and, where a changed entry moves a boundary, the one or two
// after, until the cut meets an old boundary again); every other segment is
// the previous document's, shared. The response writes the segments one
// after another: no document-sized copy per publication, and the level-1
// hashes of the digest tree are the segments' hashes, so the ETag is
// re-hashed from O(n/64) chunk hashes, not from n leaves.

// segment is one level-0 chunk of a document's listed entries. It is never
// modified once built: documents of later generations share it.
type segment struct {
	// body is the chunk's entries, each preceded by a comma: the first
	// segment is written without its first byte.
	body []byte
	ents []segEntry
	hash [32]byte // indexdigest.ChunkHash of the entries' leaves
}

// segEntry is one entry of a segment: its module, where its bytes end in
// the segment's body, and its leaf in the digest tree.
type segEntry struct {
	name string
	end  uint32
	leaf [32]byte
}

// entry returns the i-th entry's encoded bytes.
func (s *segment) entry(i int) []byte {
	start := uint32(1)
	if i > 0 {
		start = s.ents[i-1].end + 1
	}
	return s.body[start:s.ents[i].end]
}

// segmenter cuts a run of entries into segments, as the digest tree cuts
// their leaves. Its scratch slices are reused: a closed segment is copied
// out at its exact size (a few allocations per segment, none per entry).
type segmenter struct {
	body   []byte
	ents   []segEntry
	leaves [][32]byte
	out    []*segment
}

// aligned reports whether the entries added so far are all in closed
// segments: the next entry starts a chunk.
func (g *segmenter) aligned() bool { return len(g.ents) == 0 }

// reserve makes room for about n more bytes and entries more entries in
// the open segment: the scratch grows once per rebuilt segment, not by
// doubling from nothing.
func (g *segmenter) reserve(n, entries int) {
	g.body = slices.Grow(g.body, n)
	g.ents = slices.Grow(g.ents, entries)
	g.leaves = slices.Grow(g.leaves, entries)
}

// add appends one entry, closing the segment when it ends a chunk.
func (g *segmenter) add(name string, e []byte, leaf [32]byte) {
	g.body = append(append(g.body, ','), e...)
	g.ents = append(g.ents, segEntry{name: name, end: uint32(len(g.body)), leaf: leaf})
	g.leaves = append(g.leaves, leaf)
	if indexdigest.EndsChunk(leaf, len(g.ents)) {
		g.close()
	}
}

// close ends the open segment, if any (at the end of the entries).
func (g *segmenter) close() {
	if len(g.ents) == 0 {
		return
	}
	g.out = append(g.out, &segment{body: slices.Clone(g.body), ents: slices.Clone(g.ents), hash: indexdigest.ChunkHash(g.leaves)})
	g.body, g.ents, g.leaves = g.body[:0], g.ents[:0], g.leaves[:0]
}

// edit is one module's entry in a new document: e nil when it is no longer
// listed.
type edit struct {
	name string
	e    []byte
	leaf [32]byte
}

// applyEdits returns segs with edits (sorted by landing.CompareNames, one
// per module) applied: the segments no edit falls in, reached with the cut
// aligned, are segs' own; the others are cut again. O(len(segs)) pointers
// and O(edits × a segment's size) bytes.
func applyEdits(segs []*segment, edits []edit) []*segment {
	g := &segmenter{out: make([]*segment, 0, len(segs)+len(edits)/indexdigest.Fanout+2)}
	ei := 0
	for k, s := range segs {
		// The edits that fall in s: those before the next segment's first
		// entry (an edit before the first segment falls in it).
		ej := ei
		for ej < len(edits) && (k == len(segs)-1 || landing.CompareNames(edits[ej].name, segs[k+1].ents[0].name) < 0) {
			ej++
		}
		if ei == ej && g.aligned() {
			g.out = append(g.out, s)
			continue
		}
		extra := 0
		for _, ed := range edits[ei:ej] {
			extra += len(ed.e) + 1
		}
		g.reserve(len(s.body)+extra, len(s.ents)+ej-ei)
		i := 0
		for _, ed := range edits[ei:ej] {
			for ; i < len(s.ents) && landing.CompareNames(s.ents[i].name, ed.name) < 0; i++ {
				g.add(s.ents[i].name, s.entry(i), s.ents[i].leaf)
			}
			if i < len(s.ents) && landing.CompareNames(s.ents[i].name, ed.name) == 0 {
				i++ // replaced or removed
			}
			if ed.e != nil {
				g.add(ed.name, ed.e, ed.leaf)
			}
		}
		for ; i < len(s.ents); i++ {
			g.add(s.ents[i].name, s.entry(i), s.ents[i].leaf)
		}
		ei = ej
	}
	for _, ed := range edits[ei:] { // segs is empty
		if ed.e != nil {
			g.add(ed.name, ed.e, ed.leaf)
		}
	}
	g.close()
	return g.out
}

// lookup returns the listed entry of module name in segs and its leaf; nil
// when it is not listed. O(log n).
func lookup(segs []*segment, name string) ([]byte, [32]byte) {
	k := sort.Search(len(segs), func(k int) bool { return landing.CompareNames(segs[k].ents[0].name, name) > 0 }) - 1
	if k < 0 {
		return nil, [32]byte{}
	}
	s := segs[k]
	i, found := slices.BinarySearchFunc(s.ents, name, func(e segEntry, n string) int { return landing.CompareNames(e.name, n) })
	if !found {
		return nil, [32]byte{}
	}
	return s.entry(i), s.ents[i].leaf
}

// The body's fixed parts: the bytes json.Marshal of a client.Index writes
// around its entries, and the newline the seed's document ended with.
const indexHead, indexTail = `{"bundles":[`, "]}\n"

// bodySize is the length of the body segs make.
func bodySize(segs []*segment) int {
	n := len(indexHead) + len(indexTail)
	for _, s := range segs {
		n += len(s.body)
	}
	if len(segs) > 0 {
		n-- // the first segment's comma
	}
	return n
}

// writeBody writes the body segs make, one write per segment.
func writeBody(w io.Writer, segs []*segment) error {
	if _, err := io.WriteString(w, indexHead); err != nil {
		return err
	}
	for k, s := range segs {
		b := s.body
		if k == 0 {
			b = b[1:]
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, indexTail)
	return err
}

// level1 returns the digest tree's level 1 over segs' listed entries (see
// indexdigest.RootOfChunks): the segments' hashes, or the one leaf.
func level1(segs []*segment, listed int) [][32]byte {
	if listed == 1 {
		return [][32]byte{segs[0].ents[0].leaf}
	}
	out := make([][32]byte, len(segs))
	for k, s := range segs {
		out[k] = s.hash
	}
	return out
}
