package registry

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/registry/landing"
)

// flatPatched is the reference a moduleList is checked against: the served
// list as one slice, copied whole per batch of patches (what every
// publication cost before the list was chunked).
func flatPatched(mods []landing.Record, ps []patch) []landing.Record {
	out := slices.Clone(mods)
	for _, p := range ps {
		i, found := slices.BinarySearchFunc(out, p.key, func(r landing.Record, k string) int { return landing.CompareNames(r.Module, k) })
		switch serve := p.found && p.rec.State.Served(); {
		case found && p.found && p.rec.ID <= out[i].ID, !found && !serve:
		case found && serve:
			out[i] = p.rec
		case found:
			out = slices.Delete(out, i, i+1)
		default:
			out = slices.Insert(out, i, p.rec)
		}
	}
	return out
}

// A conformance-style property over random batches of publications, first
// landings and removals on 5,000 modules (thousands of chunks patched,
// split and merged): after every batch the patched list holds the records
// the flat reference holds, in order, with the content digest of those
// records; every chunk but a lone one holds between listChunkMin and
// listChunkMax records; the previous list is unchanged (snapshots are
// values); and every chunk no patch fell in is the previous list's own
// chunk, so a batch copies O(changes) records. Negative control: a list
// rebuilt from the flat result (what a copy per publication amounts to)
// holds the same records but shares no chunk.
func TestAPatchedModuleListIsTheFlatListAndSharesEveryChunkNoPatchFellIn(t *testing.T) {
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 26))
		names := make([]string, 5000)
		var flat []landing.Record
		for i := range names {
			names[i] = fmt.Sprintf("Mod%05d", i)
			if rng.IntN(3) != 0 {
				flat = append(flat, landing.Record{Module: names[i], Version: "1.0.0", State: landing.Landed, ID: fmt.Sprintf("%020d", 1)})
			}
		}
		list := newModuleList(slices.Clone(flat))
		content := contentDigest(flat)
		id := 1
		for step := range 300 {
			// Mostly small batches, some large (a derivation's patches
			// re-applied, or a removal of many modules): chunks are split
			// and merged.
			n := 1 + rng.IntN(8)
			if step%25 == 0 {
				n = 500 + rng.IntN(1500)
			}
			byName := map[string]patch{}
			for range n {
				name := names[rng.IntN(len(names))]
				id++
				rec := landing.Record{Module: name, Version: fmt.Sprintf("2.%d.0", step), State: landing.Landed, ID: fmt.Sprintf("%020d", id)}
				p := patch{key: strings.ToLower(name), rec: rec, found: true}
				switch rng.IntN(6) {
				case 0:
					p.rec.State = landing.Uninstalled
				case 1:
					p.found = false
				case 2:
					p.rec.ID = fmt.Sprintf("%020d", 0) // older than anything held
				}
				byName[name] = p
			}
			var ps []patch
			for _, name := range names {
				if p, ok := byName[name]; ok {
					ps = append(ps, p)
				}
			}
			before := slices.Clone(list.chunks)
			beforeRecs := list.flat()
			next, nextContent, changed := list.patched(content, ps)
			want := flatPatched(flat, ps)

			require.Equal(t, want, next.flat(), "seed %d step %d: the records the flat list holds", seed, step)
			require.Equal(t, len(want), next.Len())
			require.Equal(t, contentDigest(want), nextContent, "seed %d step %d: the digest of those records", seed, step)
			require.Equal(t, beforeRecs, list.flat(), "the previous list is unchanged")
			require.Equal(t, before, list.chunks)
			if changed == 0 {
				require.Equal(t, list.chunks, next.chunks, "nothing changed: the same chunks")
			}
			for k, c := range next.chunks {
				require.NotEmpty(t, c.recs)
				require.LessOrEqual(t, len(c.recs), listChunkMax, "seed %d step %d chunk %d", seed, step, k)
				if len(next.chunks) > 1 {
					require.GreaterOrEqual(t, len(c.recs), listChunkMin, "seed %d step %d chunk %d of %d", seed, step, k, len(next.chunks))
				}
			}
			// Every chunk of the previous list that no patch fell in (its
			// range between its neighbours' first modules holds no patched
			// module) is in the new list, the very same chunk.
			kept := map[*modChunk]bool{}
			for _, c := range next.chunks {
				kept[c] = true
			}
			touched := make([]bool, len(list.chunks))
			for k, c := range list.chunks {
				for _, p := range ps {
					after := k == 0 || landing.CompareNames(p.key, c.module(0)) >= 0
					before := k == len(list.chunks)-1 || landing.CompareNames(p.key, list.chunks[k+1].module(0)) < 0
					if after && before {
						touched[k] = true
						break
					}
				}
			}
			untouched := 0
			for k, c := range list.chunks {
				// A chunk beside a rebuilt one may be merged with it, if
				// that one came out short.
				if touched[k] || (k > 0 && touched[k-1]) || (k < len(touched)-1 && touched[k+1]) {
					continue
				}
				untouched++
				require.True(t, kept[c], "seed %d step %d: chunk %d (%s…) no patch fell in is shared", seed, step, k, c.module(0))
			}
			if n < 8 && len(list.chunks) > 10 {
				require.Greater(t, untouched, len(list.chunks)-3*n-2, "a small batch copies a few chunks")
			}
			list, content, flat = next, nextContent, want
		}
		// The control: the same records as one rebuilt list share nothing.
		rebuilt := newModuleList(list.flat())
		require.Equal(t, list.flat(), rebuilt.flat())
		shared := 0
		for _, c := range rebuilt.chunks {
			if slices.Contains(list.chunks, c) {
				shared++
			}
		}
		assert.Zero(t, shared, "negative control: a list copied per publication shares no chunk")
	}
}

// An empty list (a registry with nothing served yet) takes a batch of
// patches as a list of its own: the first landings, in order, and the
// removals of modules it never held change nothing. Control: the same
// batch applied one patch at a time gives the same list.
func TestAnEmptyModuleListTakesABatchOfFirstLandings(t *testing.T) {
	var ps []patch
	for i := range 700 {
		name := fmt.Sprintf("Mod%04d", i)
		ps = append(ps, patch{key: strings.ToLower(name), rec: landing.Record{Module: name, State: landing.Landed, ID: "1"}, found: i%7 != 3})
	}
	var empty moduleList
	got, content, changed := empty.patched([32]byte{}, ps)
	want := flatPatched(nil, ps)
	require.Equal(t, want, got.flat())
	assert.Equal(t, len(want), changed)
	assert.Equal(t, contentDigest(want), content)
	assert.Greater(t, len(got.chunks), 1, "cut into chunks")
	one := empty
	for _, p := range ps {
		one, _, _ = one.patched([32]byte{}, []patch{p})
	}
	assert.Equal(t, got.flat(), one.flat(), "control: one at a time")
	assert.Equal(t, 0, empty.Len())
}

// The index's walk over a list patched from the previous one skips the
// chunks the two share, and still sees a tier change in a shared chunk: the
// catalog's changed packages are checked against each skipped chunk.
// Negative control: the same patch with the catalog's list of changed
// packages emptied (the walk told nothing changed there) skips the chunk
// and misses the tier change.
func TestTheIndexWalkSkipsSharedChunksButNotATierChangeInOne(t *testing.T) {
	var recs []landing.Record
	packages := map[string]catalogPackage{}
	for i := range 3000 {
		name := fmt.Sprintf("Mod%05d", i)
		recs = append(recs, landing.Record{Module: name, Version: "1.0.0", SHA256: fmt.Sprintf("%064x", i), State: landing.Landed, ID: "1"})
		packages[moduleKey(name)] = catalogPackage{name: name, tier: ""}
	}
	allows := func(_, tier string) bool { return tier == "" }
	list := newModuleList(recs)
	cat := &catalogState{version: 1, packages: newLayered(packages)}
	prev := patchIndex(nil, list, cat, "", allows)

	// One publication in the last chunk and a tier change in the first: the
	// first chunk is shared by the two lists.
	pub := recs[2990]
	pub.Version, pub.SHA256, pub.ID = "2.0.0", fmt.Sprintf("%064x", 9999), "2"
	next, _, changed := list.patched(contentDigest(recs), []patch{{key: moduleKey(pub.Module), rec: pub, found: true}})
	require.Equal(t, 1, changed)
	require.Same(t, list.chunks[0], next.chunks[0], "the first chunk is shared")
	tierChanged := map[string]catalogPackage{}
	for k, v := range packages {
		tierChanged[k] = v
	}
	hidden := moduleKey("Mod00003")
	tierChanged[hidden] = catalogPackage{name: "Mod00003", tier: "pro"}
	cat2 := &catalogState{version: 2, changed: []string{hidden}, packages: newLayered(tierChanged)}

	got := patchIndex(prev, next, cat2, "", allows)
	want := patchIndex(nil, newModuleList(next.flat()), cat2, "", allows)
	require.Equal(t, want.etag, got.etag)
	require.Equal(t, want.bytes(), got.bytes())
	assert.ElementsMatch(t, []string{"Mod00003", pub.Module}, got.changed, "the hidden package is a removal, the publication a change")
	assert.NotContains(t, string(got.bytes()), `"Mod00003"`)

	blind := &catalogState{version: 2, changed: []string{}, packages: newLayered(tierChanged)}
	wrong := patchIndex(prev, next, blind, "", allows)
	assert.Contains(t, string(wrong.bytes()), `"Mod00003"`, "negative control: a skipped chunk keeps the hidden package")
	assert.Equal(t, []string{pub.Module}, wrong.changed)
}

// A shared chunk is walked when a changed package falls anywhere from its
// first name to its last, both included, in index order (case folded):
// anyWithin's one binary search decides as a scan of every changed package
// does, over random sets. Negative control: the same search with the
// boundaries excluded misses a package at a chunk's first or last name.
func TestAChangedPackageIsFoundInAChunkFromItsFirstNameToItsLast(t *testing.T) {
	scan := func(keys []string, first, last string) bool {
		for _, k := range keys {
			if landing.CompareNames(k, first) >= 0 && landing.CompareNames(k, last) <= 0 {
				return true
			}
		}
		return false
	}
	exclusive := func(sorted []string, first, last string) bool {
		i, found := slices.BinarySearchFunc(sorted, first, landing.CompareNames)
		if found {
			i++
		}
		return i < len(sorted) && landing.CompareNames(sorted[i], last) < 0
	}
	name := func(i int) string { return fmt.Sprintf("Mod%05d", i) }
	keys := []string{moduleKey(name(10)), moduleKey(name(20))}
	slices.SortFunc(keys, landing.CompareNames)
	assert.True(t, anyWithin(keys, name(10), name(15)), "a changed package at the chunk's first name")
	assert.True(t, anyWithin(keys, name(5), name(10)), "at its last name")
	assert.True(t, anyWithin(keys, name(11), name(25)), "inside")
	assert.False(t, anyWithin(keys, name(11), name(19)), "between two changes")
	assert.False(t, anyWithin(keys, name(21), name(30)), "after the last change")
	assert.False(t, anyWithin(nil, name(0), name(30)), "no change")
	assert.False(t, exclusive(keys, name(10), name(15)), "control: the boundaries excluded")
	assert.False(t, exclusive(keys, name(5), name(10)), "control: the boundaries excluded")

	rng := rand.New(rand.NewPCG(26, 99))
	disagreed := 0
	for range 2000 {
		var keys []string
		for range rng.IntN(40) {
			keys = append(keys, moduleKey(name(rng.IntN(200))))
		}
		slices.SortFunc(keys, landing.CompareNames)
		a, b := rng.IntN(200), rng.IntN(200)
		first, last := name(min(a, b)), name(max(a, b))
		require.Equal(t, scan(keys, first, last), anyWithin(keys, first, last), "keys %v, chunk %s..%s", keys, first, last)
		if exclusive(keys, first, last) != scan(keys, first, last) {
			disagreed++
		}
	}
	assert.Positive(t, disagreed, "control: the exclusive search disagrees with the scan")
}

// A catalog version that changes the tiers of half of 3,000 packages at
// once patches the document to the one built from nothing, though every
// chunk of the module list is shared. Negative control: the same catalog
// with its list of changed packages emptied keeps the hidden packages.
func TestACatalogChangeOfManyPackagesPatchesTheDocumentItBuildsFromNothing(t *testing.T) {
	var recs []landing.Record
	packages := map[string]catalogPackage{}
	for i := range 3000 {
		name := fmt.Sprintf("Mod%05d", i)
		recs = append(recs, landing.Record{Module: name, Version: "1.0.0", SHA256: fmt.Sprintf("%064x", i), State: landing.Landed, ID: "1"})
		packages[moduleKey(name)] = catalogPackage{name: name, tier: ""}
	}
	allows := func(_, tier string) bool { return tier == "" }
	list := newModuleList(recs)
	prev := patchIndex(nil, list, &catalogState{version: 1, packages: newLayered(packages)}, "", allows)

	rng := rand.New(rand.NewPCG(26, 100))
	next := map[string]catalogPackage{}
	for k, v := range packages {
		next[k] = v
	}
	var changed []string
	for _, i := range rng.Perm(3000)[:1500] {
		name := fmt.Sprintf("Mod%05d", i)
		next[moduleKey(name)] = catalogPackage{name: name, tier: "pro"}
		changed = append(changed, moduleKey(name))
	}
	cat2 := &catalogState{version: 2, changed: changed, packages: newLayered(next)}
	got := patchIndex(prev, list, cat2, "", allows)
	want := patchIndex(nil, list, cat2, "", allows)
	require.Equal(t, want.etag, got.etag)
	require.Equal(t, want.bytes(), got.bytes())
	assert.Len(t, got.changed, 1500)

	blind := patchIndex(prev, list, &catalogState{version: 2, changed: []string{}, packages: newLayered(next)}, "", allows)
	assert.NotEqual(t, want.etag, blind.etag, "negative control: the hidden packages are kept")
}
