// Package indexdigest is the registry index's digest: a Merkle tree over the
// index's entries in their order (module names, case folded), whose root the
// server sends as the index's ETag and with every delta, and which a client
// recomputes from the entries it holds to check that it applied a delta
// right.
//
// What is hashed (every hash is SHA-256; || is concatenation):
//
//   - a leaf, one per listed entry:
//     0x00 || len(plugin) || plugin || len(version) || version || len(url) || url || len(sha256) || sha256,
//     each len a 4-byte big-endian byte count of the field as the index
//     lists it (the JSON-decoded string);
//   - level 0 is the leaves in index order. A level is cut into chunks: a
//     chunk ends after an element whose first byte is a multiple of
//     [Fanout] once it holds at least two elements, or at the end of the
//     level. A chunk's hash is 0x01 || its elements; the chunk hashes are
//     the next level, until a level has one element (the top);
//   - the root is 0x02 || count || top, count the number of entries as 8
//     bytes big-endian, top 32 zero bytes for an empty index.
//
// The boundaries depend only on the elements (content-defined, as in a
// prolly tree), so the tree is a function of the entries, not of the order
// they were added in, and a change touches the chunks on its path alone:
// an update re-hashes O(Fanout × log n) bytes per changed entry, after an
// O(n) scan of one byte per element to find the boundaries. Unlike an XOR
// (or any sum) of entry hashes, the root is not linear: a publisher who
// chooses module contents cannot make two indexes share a root without a
// SHA-256 collision.
package indexdigest

import (
	"crypto/sha256"
	"encoding/binary"
)

// Fanout is the average number of elements in a chunk.
const Fanout = 64

// Leaf is the hash of one entry.
func Leaf(plugin, version, url, sha string) [32]byte {
	var buf [512]byte // entries are short: most hash without allocating
	b := append(buf[:0], 0x00)
	for _, f := range [...]string{plugin, version, url, sha} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return sha256.Sum256(b)
}

// Tree is one index's digest and what a later index's digest reuses from
// it: the chunks of every level. It is a value: never modified once built.
type Tree struct {
	root   [32]byte
	count  int
	levels []map[[32]byte]chunk // per level: chunks by their first element
}

// chunk is one chunk: how many elements it holds and its hash.
type chunk struct {
	n    int32
	hash [32]byte
}

// Root returns the tree's root.
func (t *Tree) Root() [32]byte { return t.root }

// Root computes the root over leaves, in order.
func Root(leaves [][32]byte) [32]byte { return Build(nil, leaves, nil).root }

// Build computes the tree over leaves, in order, re-hashing only what
// changed since prev (nil: everything). clean reports whether leaf i is
// one prev held, at the same place relative to its neighbours: unchanged,
// and not right after an element prev held that is gone. nil clean (or nil
// prev) means no leaf is.
func Build(prev *Tree, leaves [][32]byte, clean func(i int) bool) *Tree {
	t := &Tree{count: len(leaves)}
	var buf []byte // one chunk's bytes, reused: hashing allocates nothing per chunk
	level := leaves
	var cleanAt func(int) bool
	if prev != nil && clean != nil {
		cleanAt = clean
	}
	for depth := 0; len(level) > 1; depth++ {
		var old map[[32]byte]chunk
		if prev != nil && depth < len(prev.levels) {
			old = prev.levels[depth]
		}
		next, nextClean, chunks := cut(&buf, level, cleanAt, old)
		t.levels = append(t.levels, chunks)
		level = next
		cleanAt = nil
		if old != nil {
			cleanAt = func(i int) bool { return nextClean[i] }
		}
	}
	t.root = rootOf(len(leaves), level)
	return t
}

// rootOf is the root of count entries whose tree's top level is level (one
// element, or none for an empty index).
func rootOf(count int, level [][32]byte) [32]byte {
	var top [32]byte
	if len(level) == 1 {
		top = level[0]
	}
	var head [41]byte
	head[0] = 0x02
	binary.BigEndian.PutUint64(head[1:], uint64(count))
	copy(head[9:], top[:])
	return sha256.Sum256(head[:])
}

// EndsChunk reports whether a chunk that holds n elements, the last of
// them last, ends there (a level's last element ends its chunk as well).
// Whoever keeps the leaves cut into level-0 chunks (the server keeps the
// index's body so) cuts them with it, and gives RootOfChunks their hashes.
func EndsChunk(last [32]byte, n int) bool { return n >= 2 && last[0]%Fanout == 0 }

// ChunkHash is the hash of one chunk of elements, in order.
func ChunkHash(elems [][32]byte) [32]byte {
	h := sha256.New()
	h.Write([]byte{0x01})
	for i := range elems {
		h.Write(elems[i][:])
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// RootOfChunks is the root of count leaves given level 1 of their tree:
// the ChunkHash of each level-0 chunk, cut as EndsChunk says, in order.
// For a single leaf (which no chunk hashes) level 1 is that leaf; for no
// leaves it is empty. The levels above are O(count/Fanout) elements:
// they are hashed again, none is kept.
func RootOfChunks(count int, level1 [][32]byte) [32]byte {
	level := level1
	var buf []byte
	for len(level) > 1 {
		next := make([][32]byte, 0, len(level)/Fanout+2)
		start := 0
		for i := range level {
			if i != len(level)-1 && !EndsChunk(level[i], i-start+1) {
				continue
			}
			b := append(buf[:0], 0x01)
			for k := start; k <= i; k++ {
				b = append(b, level[k][:]...)
			}
			buf = b
			next = append(next, sha256.Sum256(b))
			start = i + 1
		}
		level = next
	}
	return rootOf(count, level)
}

// cut cuts one level into chunks and returns the next level, which of its
// elements are clean (reused from old), and the chunks by first element.
func cut(buf *[]byte, level [][32]byte, clean func(int) bool, old map[[32]byte]chunk) ([][32]byte, []bool, map[[32]byte]chunk) {
	next := make([][32]byte, 0, len(level)/Fanout+2)
	var nextClean []bool
	if old != nil {
		nextClean = make([]bool, 0, cap(next))
	}
	chunks := make(map[[32]byte]chunk, cap(next))
	start := 0
	allClean := true
	for i := range level {
		if clean == nil || !clean(i) {
			allClean = false
		}
		n := i - start + 1
		if i != len(level)-1 && (n < 2 || level[i][0]%Fanout != 0) {
			continue
		}
		first := level[start]
		var c chunk
		// A chunk of clean elements that starts where one of old did and
		// is as long is that chunk: clean elements keep their order, and
		// one after a removal is not clean.
		reused := false
		if allClean && old != nil {
			if o, ok := old[first]; ok && int(o.n) == n {
				c, reused = o, true
			}
		}
		if !reused {
			b := append((*buf)[:0], 0x01)
			for k := start; k <= i; k++ {
				b = append(b, level[k][:]...)
			}
			*buf = b
			c = chunk{n: int32(n), hash: sha256.Sum256(b)}
		}
		chunks[first] = c
		next = append(next, c.hash)
		if nextClean != nil {
			nextClean = append(nextClean, reused)
		}
		start, allClean = i+1, true
	}
	return next, nextClean, chunks
}
