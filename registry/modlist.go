package registry

import (
	"slices"
	"sort"

	"github.com/meshrx/meshrx/registry/landing"
)

// moduleList is the served snapshot's modules (the latest record of every
// served module, ordered by landing.CompareNames), kept as a persistent
// list: cut into chunks of about listChunk records, each chunk immutable
// once built and shared by every later snapshot that did not change it. A
// publication copies the chunks its modules fall in and the slice of chunk
// pointers: O(changes × listChunk + modules/listChunk), where one flat
// slice cost a copy of every record (16.8 MB at 100,000 modules) per
// publication. The index's walk of two lists (patchSegments) skips the
// chunks they share.
type moduleList struct {
	chunks []*modChunk
	n      int
}

// The chunks' sizes: a list is cut into listChunk records a chunk; a
// rebuilt chunk longer than twice that is cut again, and one shorter than a
// quarter of it is merged with its neighbour, so that every chunk of a list
// of more than one chunk holds at least listChunk/4 records.
const (
	listChunk    = 256
	listChunkMin = listChunk / 4
	listChunkMax = 2 * listChunk
)

// newModuleList returns the list of mods (sorted, one record per module),
// packed into chunks (see modChunk): it keeps nothing of mods.
func newModuleList(mods []landing.Record) moduleList {
	l := moduleList{n: len(mods), chunks: make([]*modChunk, 0, (len(mods)+listChunk-1)/listChunk)}
	for i := 0; i < len(mods); i += listChunk {
		j := min(i+listChunk, len(mods))
		if len(mods)-j < listChunkMin {
			j = len(mods) // a short tail joins the last chunk
		}
		l.chunks = append(l.chunks, newChunk(mods[i:j]))
		i = j - listChunk
	}
	return l
}

// Len is the number of modules in the list.
func (l moduleList) Len() int { return l.n }

// flat returns the list's records in one new slice: O(modules).
func (l moduleList) flat() []landing.Record {
	out := make([]landing.Record, 0, l.n)
	for _, c := range l.chunks {
		for i := range c.len() {
			out = append(out, c.record(i))
		}
	}
	return out
}

// chunkOf returns the index of the chunk module falls in: the last whose
// first record is not after it (0 for a module before every chunk), -1 for
// an empty list.
func (l moduleList) chunkOf(module string) int {
	if len(l.chunks) == 0 {
		return -1
	}
	k := sort.Search(len(l.chunks), func(k int) bool { return landing.CompareNames(l.chunks[k].module(0), module) > 0 })
	return max(k-1, 0)
}

// lookup returns module's record (its strings its own), compared without
// case; false when it is not in the list. O(log n).
func (l moduleList) lookup(module string) (landing.Record, bool) {
	k := l.chunkOf(module)
	if k < 0 {
		return landing.Record{}, false
	}
	c := l.chunks[k]
	i, ok := sort.Find(c.len(), func(i int) int { return landing.CompareNames(module, c.module(i)) })
	if !ok {
		return landing.Record{}, false
	}
	return c.record(i), true
}

// patched returns l with each patch's module set to its record: replaced,
// inserted (in order, by module key) or removed when the record is not
// served, and content (the list's contentDigest) updated to match in O(1)
// per module. A record older than the one held (record ids order a module's
// records) changes nothing. ps is in module-key order with one patch per
// module. l is never modified (snapshots are values): the chunks no patch
// changes are l's own, the others are copied. It returns l itself, and
// changed 0, when no patch changes anything.
func (l moduleList) patched(content [32]byte, ps []patch) (_ moduleList, _ [32]byte, changed int) {
	var (
		out  []*modChunk
		done int // l.chunks[:done] are in out (once out exists)
		n    = l.n
	)
	for pi := 0; pi < len(ps); {
		// The patches that fall in chunk k.
		k := max(l.chunkOf(ps[pi].key), 0)
		pj := pi + 1
		for pj < len(ps) && (k >= len(l.chunks)-1 || landing.CompareNames(ps[pj].key, l.chunks[k+1].module(0)) < 0) {
			pj++
		}
		var old []landing.Record // in place: the chunk is packed again if it changes
		if k < len(l.chunks) {
			old = l.chunks[k].peekAll()
		}
		recs, c, d := patchedRecords(old, content, ps[pi:pj])
		pi = pj
		if d == 0 {
			continue
		}
		content, changed = c, changed+d
		n += len(recs) - len(old)
		if out == nil {
			out = make([]*modChunk, 0, len(l.chunks)+2)
		}
		out = append(out, l.chunks[done:k]...)
		done = min(k+1, len(l.chunks))
		out = appendChunks(out, recs)
	}
	if changed == 0 {
		return l, content, 0
	}
	out = append(out, l.chunks[done:]...)
	return moduleList{chunks: mergeSmall(out), n: n}, content, changed
}

// appendChunks appends recs to out as chunks of at most listChunkMax
// records (none when recs is empty), packed: nothing of recs is kept.
func appendChunks(out []*modChunk, recs []landing.Record) []*modChunk {
	for len(recs) > listChunkMax {
		out = append(out, newChunk(recs[:listChunk]))
		recs = recs[listChunk:]
	}
	if len(recs) > 0 {
		out = append(out, newChunk(recs))
	}
	return out
}

// mergeSmall merges every chunk shorter than listChunkMin into its
// successor (the last one into its predecessor), cutting the result again
// when it grows past listChunkMax. Only chunks a patch just built can be
// short, so the merges are few; chunks already long enough are kept as
// they are.
func mergeSmall(chunks []*modChunk) []*modChunk {
	short := false
	for _, c := range chunks {
		if c.len() < listChunkMin {
			short = true
			break
		}
	}
	if !short || len(chunks) < 2 {
		return chunks
	}
	out := make([]*modChunk, 0, len(chunks))
	var carry []landing.Record // records of short chunks not yet placed
	for _, c := range chunks {
		if carry == nil && c.len() >= listChunkMin {
			out = append(out, c)
			continue
		}
		carry = append(carry, c.peekAll()...)
		if len(carry) >= listChunkMin {
			out = appendChunks(out, carry)
			carry = nil
		}
	}
	if carry != nil {
		if len(out) == 0 {
			return appendChunks(out, carry)
		}
		last := out[len(out)-1]
		merged := append(last.peekAll(), carry...)
		out = appendChunks(out[:len(out)-1], merged)
	}
	return out
}

// patchedRecords returns recs (one chunk's records, never modified) with ps
// applied, a new slice when anything changed, as patched does for a list.
func patchedRecords(recs []landing.Record, content [32]byte, ps []patch) (_ []landing.Record, _ [32]byte, changed int) {
	var out []landing.Record
	i := 0 // into recs: recs[:i] are copied to out (once out exists)
	for _, p := range ps {
		j, found := slices.BinarySearchFunc(recs[i:], p.key, func(r landing.Record, k string) int {
			return landing.CompareNames(r.Module, k)
		})
		j += i
		serve := p.found && p.rec.State.Served()
		if (found && p.found && p.rec.ID <= recs[j].ID) || (!found && !serve) {
			continue // what we hold is as new, or nothing to remove
		}
		if out == nil {
			out = make([]landing.Record, 0, len(recs)+len(ps))
		}
		out = append(out, recs[i:j]...)
		i = j
		if found {
			content = toggled(content, recs[j])
			i++
		}
		if serve {
			out = append(out, p.rec)
			content = toggled(content, p.rec)
		}
		changed++
	}
	if changed == 0 {
		return recs, content, 0
	}
	return append(out, recs[i:]...), content, changed
}
