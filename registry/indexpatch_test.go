package registry

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
)

// patchWorld is an activation and a catalog that a test changes step by
// step, as publications, removals and tier changes would.
type patchWorld struct {
	mods    map[string]landing.Record
	tiers   map[string]string
	version uint64
}

func (w *patchWorld) activation() landing.Activation {
	var act landing.Activation
	for i := range 400 {
		if r, ok := w.mods[fmt.Sprintf("m%03d", i)]; ok {
			act.Modules = append(act.Modules, r)
		}
	}
	return act
}

func (w *patchWorld) catalog(changed []string) *catalogState {
	w.version++
	packages := map[string]catalogPackage{}
	for k, t := range w.tiers {
		packages[k] = catalogPackage{name: k, tier: t}
	}
	return &catalogState{version: w.version, changed: changed, packages: newLayered(packages)}
}

func TestAPatchedIndexIsTheDocumentAFullAssemblyWritesAndReusesUnchangedEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := &patchWorld{mods: map[string]landing.Record{}, tiers: map[string]string{}}
	for i := range 300 {
		k := fmt.Sprintf("m%03d", i)
		w.mods[k] = landing.Record{Module: k, Version: "1.0.0", SHA256: fmt.Sprintf("%064d", i), State: landing.Landed}
		w.tiers[k] = []string{"", "pro"}[i%2]
	}
	allows := func(_, tier string) bool { return tier == "" }
	act, cat := w.activation(), w.catalog(nil)
	prev := patchIndex(nil, newModuleList(act.Modules), cat, "", allows)
	for step := range 200 {
		var changed []string
		switch k := fmt.Sprintf("m%03d", rng.IntN(400)); rng.IntN(4) {
		case 0: // a new version, or a first landing
			w.mods[k] = landing.Record{Module: k, Version: fmt.Sprintf("2.0.%d", step), SHA256: fmt.Sprintf("%064d", step), State: landing.Landed}
			if _, ok := w.tiers[k]; !ok {
				w.tiers[k] = ""
				changed = []string{k}
			}
		case 1: // an uninstall
			delete(w.mods, k)
		case 2: // a tier change
			w.tiers[k] = []string{"", "pro"}[rng.IntN(2)]
			changed = []string{k}
		case 3: // nothing: a re-derivation finding the same records
		}
		act = w.activation()
		if changed != nil || rng.IntN(3) == 0 {
			cat = w.catalog(changed)
		}
		next := patchIndex(prev, newModuleList(act.Modules), cat, "", allows)
		full := patchIndex(nil, newModuleList(act.Modules), cat, "", allows)
		require.True(t, string(full.bytes()) == string(next.bytes()), "step %d: the patched document is the full one", step)
		require.Equal(t, full.etag, next.etag, "step %d: and so is its ETag", step)
		require.True(t, string(referenceIndex(act, cat, allows)) == string(next.bytes()), "step %d: the document json.Marshal writes", step)
		prev = next
	}

	// Unchanged entries are the previous document's bytes, not re-encoded:
	// a patch for one changed module allocates a handful of objects (the
	// body, its spans and leaves, one entry, three or four per level of the
	// digest tree), a full assembly one entry per module.
	var listed []string
	for _, r := range prev.mods.flat() {
		if e, _ := prev.lookup(r.Module); e != nil {
			listed = append(listed, r.Module)
		}
	}
	require.GreaterOrEqual(t, len(listed), 3)
	w.mods[listed[0]] = landing.Record{Module: listed[0], Version: "9.0.0", SHA256: fmt.Sprintf("%064d", 9), State: landing.Landed}
	changed := w.activation()
	changedList := newModuleList(changed.Modules)
	patchAllocs := testing.AllocsPerRun(20, func() { patchIndex(prev, changedList, cat, "", allows) })
	fullAllocs := testing.AllocsPerRun(20, func() { patchIndex(nil, changedList, cat, "", allows) })
	t.Logf("%d listed: a patch %.0f allocations, a full assembly %.0f", len(listed), patchAllocs, fullAllocs)
	// encoding/json's pools drop entries at random under -race: a margin.
	assert.Less(t, patchAllocs, 48.0, "one module changed: one entry encoded")
	assert.Less(t, patchAllocs*10, fullAllocs, "a patch encodes a small fraction of what an assembly does")
	assert.Greater(t, fullAllocs, float64(len(listed)), "negative control: a full assembly encodes every listed entry")
	next := patchIndex(prev, newModuleList(changed.Modules), cat, "", allows)
	require.True(t, string(referenceIndex(changed, cat, allows)) == string(next.bytes()))
	prev = next

	// Negative control: a catalog version that skips one cannot be patched
	// from the changes it lists; with the check removed (its changes taken
	// as complete) the patch misses the skipped version's change.
	w.tiers[moduleKey(listed[1])] = "pro"
	w.catalog([]string{moduleKey(listed[1])}) // a version this entitlement never asked for
	w.tiers[moduleKey(listed[2])] = "pro"
	after := w.catalog([]string{moduleKey(listed[2])})
	want := patchIndex(nil, newModuleList(w.activation().Modules), after, "", allows).bytes()
	got := patchIndex(prev, newModuleList(w.activation().Modules), after, "", allows)
	assert.True(t, string(want) == string(got.bytes()), "a gap in catalog versions re-checks every package")
	after.version = prev.cat.version + 1 // remove the check: pretend no version was skipped
	wrong := patchIndex(prev, newModuleList(w.activation().Modules), after, "", allows)
	assert.False(t, string(want) == string(wrong.bytes()), "without the check the skipped change is missed")
	assert.Contains(t, string(wrong.bytes()), `"`+listed[1]+`"`)
}

// referenceIndex is the document as the seed assembled it: json.Marshal of
// a client.Index.
func referenceIndex(act landing.Activation, cat *catalogState, allows func(plugin, tier string) bool) []byte {
	idx := client.Index{Bundles: []client.IndexEntry{}}
	for _, r := range act.Modules {
		pkg := cat.lookup(r.Module)
		if pkg.unreadable || !allows(r.Module, pkg.tier) {
			continue
		}
		idx.Bundles = append(idx.Bundles, client.IndexEntry{Plugin: r.Module, Version: r.Version,
			URL: client.BundlesPath + "/" + url.PathEscape(r.Module) + "/" + url.PathEscape(r.Version), SHA256: r.SHA256})
	}
	body, _ := json.Marshal(idx)
	return append(body, '\n')
}

func indexOf(b *indexBase, module string) int {
	for i, r := range b.mods.flat() {
		if r.Module == module {
			return i
		}
	}
	return -1
}

// The content digest a patch keeps is the digest of the list it produces,
// over random replacements, insertions and removals: the index's ETag
// generation can trust it without re-reading every module. Negative
// control: a digest left as it was (not toggled) differs after the first
// change that serves other bytes.
func TestAPatchedContentDigestEqualsTheDigestOfThePatchedList(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 15))
	var mods moduleList
	content := contentDigest(nil)
	stale := content
	id := 0
	for range 500 {
		id++
		name := fmt.Sprintf("Mod%02d", rng.IntN(40))
		rec := landing.Record{Module: name, State: landing.Landed, Version: fmt.Sprintf("1.%d.0", rng.IntN(5)),
			SHA256: fmt.Sprintf("%064x", rng.IntN(1000)), ID: fmt.Sprintf("%020d", id)}
		if rng.IntN(4) == 0 {
			rec.State = landing.Removed
		}
		mods, content, _ = mods.patched(content, []patch{{key: strings.ToLower(name), rec: rec, found: true}})
		require.Equal(t, contentDigest(mods.flat()), content)
	}
	require.NotZero(t, mods.Len())
	assert.NotEqual(t, stale, content, "negative control: the digest before the changes no longer matches")
}

// A batch of patches (what the change feed named at once) gives the list
// and digest that applying them one by one gives, copying each chunk it
// touches once: the one-by-one path, kept here as the negative control,
// copies a chunk per changed module.
func TestABatchOfPatchesIsAppliedInOneCopyAndAgreesWithPatchingOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	id := 1000
	record := func(name string) landing.Record {
		id++
		r := landing.Record{Module: name, State: landing.Landed, Version: fmt.Sprintf("1.%d.0", rng.IntN(5)),
			SHA256: fmt.Sprintf("%064x", rng.IntN(1000)), ID: fmt.Sprintf("%020d", id)}
		if rng.IntN(4) == 0 {
			r.State = landing.Uninstalled
		}
		return r
	}
	for round := range 200 {
		var recs []landing.Record
		for k := range 60 {
			if rng.IntN(2) == 0 {
				r := record(fmt.Sprintf("Mod%02d", k))
				r.State = landing.Landed
				recs = append(recs, r)
			}
		}
		mods := newModuleList(recs)
		content := contentDigest(recs)
		var ps []patch
		for k := range 60 {
			if rng.IntN(5) != 0 {
				continue
			}
			name := fmt.Sprintf("Mod%02d", k)
			p := patch{key: strings.ToLower(name), rec: record(name), found: rng.IntN(6) != 0}
			if rng.IntN(8) == 0 {
				p.rec.ID = "00000000000000000001" // older than anything held
			}
			ps = append(ps, p)
		}
		oneByOne, oneContent := mods, content
		for _, p := range ps {
			oneByOne, oneContent, _ = oneByOne.patched(oneContent, []patch{p})
		}
		got, gotContent, changed := mods.patched(content, ps)
		require.Equal(t, oneByOne.flat(), got.flat(), "round %d", round)
		require.Equal(t, oneContent, gotContent, "round %d", round)
		require.Equal(t, contentDigest(got.flat()), gotContent)
		if changed == 0 {
			require.Equal(t, mods.chunks, got.chunks, "nothing changed: the same list, not a copy")
		}
	}

	recs := make([]landing.Record, 0, 1000)
	for k := range 1000 {
		recs = append(recs, landing.Record{Module: fmt.Sprintf("Mod%04d", k), State: landing.Landed, ID: "1"})
	}
	mods := newModuleList(recs)
	require.Len(t, mods.chunks, 4)
	var ps []patch
	for k := 0; k < 1000; k += 10 {
		ps = append(ps, patch{key: fmt.Sprintf("mod%04d", k), rec: landing.Record{Module: fmt.Sprintf("Mod%04d", k), State: landing.Landed, Version: "2.0.0", ID: "2"}, found: true})
	}
	content := contentDigest(recs)
	batch := testing.AllocsPerRun(10, func() { mods.patched(content, ps) })
	oneByOne := testing.AllocsPerRun(10, func() {
		m, c := mods, content
		for _, p := range ps {
			m, c, _ = m.patched(c, []patch{p})
		}
	})
	// Per chunk touched: its records read out (peekAll), the patched
	// records, and the packed chunk (the chunk, its packed records, its
	// arena, its locations); and the chunk list.
	assert.Equal(t, 4*6+1.0, batch, "one copy of each of the 4 chunks for 100 modules")
	assert.Equal(t, 100*7.0, oneByOne, "negative control: a copy of a chunk (and of the chunk list) per module")
}

// A catalog frame names the packages it changed by key (lower case); the
// patch finds them among modules spelled with capitals, and mixes of
// them, so a tier change of any spelling reaches the index. Negative
// control (run): with the changed keys searched by exact spelling
// (strings.Compare for landing.CompareNames) the patched documents kept
// the old tiers' entries and the test failed at its first step.
func TestATierChangeOfAModuleSpelledWithCapitalsIsPatchedIntoTheIndex(t *testing.T) {
	var mods []landing.Record
	tiers := map[string]string{}
	for i := range 600 {
		name := fmt.Sprintf("Acme.Mod%03d", i)
		if i%3 == 1 {
			name = fmt.Sprintf("acme.MOD%03d", i)
		}
		mods = append(mods, landing.Record{Module: name, Version: "1.0.0", SHA256: fmt.Sprintf("%064d", i), State: landing.Landed})
		tiers[moduleKey(name)] = ""
	}
	allows := func(_, tier string) bool { return tier == "" }
	catalog := func(version uint64, changed []string) *catalogState {
		packages := map[string]catalogPackage{}
		for k, tier := range tiers {
			packages[k] = catalogPackage{name: k, tier: tier}
		}
		return &catalogState{version: version, changed: changed, packages: newLayered(packages)}
	}
	list := newModuleList(mods)
	cat := catalog(1, nil)
	prev := patchIndex(nil, list, cat, "", allows)
	for step, i := range []int{0, 1, 299, 599, 1} {
		key := moduleKey(mods[i].Module)
		tiers[key] = map[string]string{"": "pro", "pro": ""}[tiers[key]]
		cat = catalog(cat.version+1, []string{key, key})
		next := patchIndex(prev, list, cat, "", allows)
		full := patchIndex(nil, list, cat, "", allows)
		require.True(t, string(full.bytes()) == string(next.bytes()), "step %d (%s to %q): the patched document is the full one",
			step, mods[i].Module, tiers[key])
		prev = next
	}
}
