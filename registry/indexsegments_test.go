package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/indexdigest"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
)

// segWorld is a few thousand modules and their tiers, changed in random
// batches as publications, first landings, uninstalls and tier changes
// would change them.
type segWorld struct {
	rng     *rand.Rand
	names   []string // every name that may be served, in index order
	mods    map[string]landing.Record
	tiers   map[string]string
	version uint64
	// list is the served list kept as a snapshot keeps it: patched with
	// each step's changes, sharing the chunks they did not touch.
	list moduleList
	id   int
}

func newSegWorld(seed uint64, n int) *segWorld {
	w := &segWorld{rng: rand.New(rand.NewPCG(seed, 99)), mods: map[string]landing.Record{}, tiers: map[string]string{}}
	for i := range n {
		name := fmt.Sprintf("Mod%05d", i)
		w.names = append(w.names, name)
		w.tiers[moduleKey(name)] = []string{"", "", "pro"}[i%3]
		if w.rng.IntN(4) != 0 {
			w.mods[name] = landing.Record{Module: name, Version: "1.0.0", SHA256: fmt.Sprintf("%064x", i), State: landing.Landed, ID: w.nextID()}
		}
	}
	w.list = newModuleList(w.activation().Modules)
	return w
}

func (w *segWorld) nextID() string {
	w.id++
	return fmt.Sprintf("%020d", w.id)
}

func (w *segWorld) activation() landing.Activation {
	var act landing.Activation
	for _, name := range w.names {
		if r, ok := w.mods[name]; ok {
			act.Modules = append(act.Modules, r)
		}
	}
	return act
}

// step changes up to 40 modules at random and returns the catalog after it.
func (w *segWorld) step(step int) *catalogState {
	var changed []string
	written := map[string]patch{}
	for range 1 + w.rng.IntN(40) {
		name := w.names[w.rng.IntN(len(w.names))]
		switch w.rng.IntN(4) {
		case 0, 1: // a new version, or a first landing
			w.mods[name] = landing.Record{Module: name, Version: fmt.Sprintf("2.%d.0", step), SHA256: fmt.Sprintf("%064x", w.rng.Uint64()), State: landing.Landed, ID: w.nextID()}
			written[name] = patch{key: moduleKey(name), rec: w.mods[name], found: true}
		case 2: // an uninstall
			delete(w.mods, name)
			written[name] = patch{key: moduleKey(name), rec: landing.Record{Module: name, State: landing.Uninstalled, ID: w.nextID()}, found: true}
		case 3: // a tier change
			w.tiers[moduleKey(name)] = []string{"", "pro"}[w.rng.IntN(2)]
			changed = append(changed, moduleKey(name))
		}
	}
	var ps []patch
	for _, name := range w.names {
		if p, ok := written[name]; ok {
			ps = append(ps, p)
		}
	}
	w.list, _, _ = w.list.patched([32]byte{}, ps)
	w.version++
	packages := map[string]catalogPackage{}
	for k, t := range w.tiers {
		packages[k] = catalogPackage{name: k, tier: t}
	}
	return &catalogState{version: w.version, changed: changed, packages: newLayered(packages)}
}

// A conformance-style property over random publication sequences: a
// document patched from the previous one, segment by segment, is byte for
// byte the document built from nothing (and the one json.Marshal writes),
// with its ETag, its declared length and its very segments (cut where the
// digest tree cuts); and it shares every segment no change fell in. The
// document is patched from the served list as a snapshot keeps it (each
// step's changes patched into the previous list, the chunks they did not
// touch shared, and skipped by the walk unless a tier change fell in one).
// The
// negative control patches "carelessly": each touched segment rebuilt in
// place, its boundaries kept, the untouched ones reused as they are. Its
// body is the same bytes, but its segments are no longer the tree's
// chunks, and its root differs from the document's within a few steps:
// the re-cut after a change is what keeps the ETag right.
func TestAPatchedSegmentedBodyIsByteIdenticalToOneBuiltFromScratchOverRandomPublications(t *testing.T) {
	allows := func(_, tier string) bool { return tier == "" }
	careless := 0
	for seed := range uint64(2) {
		w := newSegWorld(seed, 2000)
		cat := w.step(0)
		prev := patchIndex(nil, w.list, cat, "https://r.example", allows)
		for step := 1; step <= 40; step++ {
			cat = w.step(step)
			act := w.activation()
			require.Equal(t, act.Modules, w.list.flat(), "seed %d step %d: the patched list is the world's", seed, step)
			next := patchIndex(prev, w.list, cat, "https://r.example", allows)
			full := patchIndex(nil, newModuleList(act.Modules), cat, "https://r.example", allows)
			body := next.bytes()
			require.True(t, bytes.Equal(full.bytes(), body), "seed %d step %d: the patched body is the one built from nothing", seed, step)
			require.Equal(t, full.etag, next.etag, "seed %d step %d", seed, step)
			require.Len(t, body, next.size, "the declared Content-Length")
			var parsed client.Index
			require.NoError(t, json.Unmarshal(body, &parsed))
			require.Len(t, parsed.Bundles, next.listed)
			require.Len(t, next.segs, len(full.segs), "seed %d step %d: the same cut", seed, step)
			for k := range full.segs {
				require.True(t, bytes.Equal(full.segs[k].body, next.segs[k].body), "seed %d step %d segment %d", seed, step, k)
				require.Equal(t, full.segs[k].hash, next.segs[k].hash)
			}
			shared := 0
			old := map[*segment]bool{}
			for _, s := range prev.segs {
				old[s] = true
			}
			for _, s := range next.segs {
				if old[s] {
					shared++
				}
			}
			// Each changed module rebuilds its segment and at most a
			// couple after it (the cut meets an old boundary again).
			require.GreaterOrEqual(t, shared, len(next.segs)-3*len(next.changed)-1, "seed %d step %d: %d changes rebuilt %d of %d segments",
				seed, step, len(next.changed), len(next.segs)-shared, len(next.segs))

			bad := carelessSegments(prev.segs, next)
			require.True(t, bytes.Equal(body, (&indexBase{segs: bad, size: bodySize(bad)}).bytes()), "the control writes the same bytes")
			if indexdigest.RootOfChunks(next.listed, level1(bad, next.listed)) != next.root {
				careless++
			}
			prev = next
		}
	}
	t.Logf("the careless patch gave another root at %d of 80 steps", careless)
	assert.Positive(t, careless, "negative control: segments not re-cut after a change give another root")
}

// carelessSegments is the negative control's patch: every segment of prev
// that holds (or would hold) a changed entry is rebuilt as one segment with
// the new document's entries in its range, boundaries kept.
func carelessSegments(prev []*segment, next *indexBase) []*segment {
	var all []segEntry
	var bodies [][]byte
	for _, s := range next.segs {
		for i := range s.ents {
			all = append(all, s.ents[i])
			bodies = append(bodies, s.entry(i))
		}
	}
	var out []*segment
	j := 0
	for k, s := range prev {
		sg := &segment{}
		var leaves [][32]byte
		for ; j < len(all) && (k == len(prev)-1 || landing.CompareNames(all[j].name, prev[k+1].ents[0].name) < 0); j++ {
			sg.body = append(append(sg.body, ','), bodies[j]...)
			sg.ents = append(sg.ents, segEntry{name: all[j].name, end: uint32(len(sg.body)), leaf: all[j].leaf})
			leaves = append(leaves, all[j].leaf)
		}
		if bytes.Equal(sg.body, s.body) {
			out = append(out, s)
			continue
		}
		if len(sg.ents) > 0 {
			sg.hash = indexdigest.ChunkHash(leaves)
			out = append(out, sg)
		}
	}
	return out
}

// A delta poll that arrives while another request patches its
// entitlement's document is answered from the history at once (the
// document before the publication: a 304 here), without waiting for the
// patch and without patching again; the poll after it gets the
// publication. Control (the fix removed: the same request made as one that
// waits, as every request did before): it is seen held in the document's
// assembly while the patch is held, and returns the patched document only
// once the patch is done.
func TestADeltaPollDoesNotWaitForAnotherRequestsPatchOfItsDocument(t *testing.T) {
	w := newSegWorld(1, 500)
	cat := w.step(0)
	allows := func(string, string) bool { return true }
	c := newIndexCache(0)
	const ent = "e"
	first := c.get(indexKey{gen: indexGeneration{content: 1, catalog: 1}, entitlement: ent}, func(p *indexBase) *indexBase {
		return patchIndex(p, w.list, cat, "", allows)
	}, true)
	require.NotNil(t, first)

	cat2 := w.step(1)
	list2 := w.list
	key2 := indexKey{gen: indexGeneration{content: 2, catalog: 1}, entitlement: ent}
	started, release := make(chan struct{}), make(chan struct{})
	patched := make(chan *indexBase, 1)
	go func() {
		patched <- c.get(key2, func(p *indexBase) *indexBase {
			close(started)
			<-release
			return patchIndex(p, list2, cat2, "", allows)
		}, true)
	}()
	<-started

	var builds atomic.Int32
	other := func(p *indexBase) *indexBase { builds.Add(1); return patchIndex(p, list2, cat2, "", allows) }
	polled := make(chan *indexBase, 1)
	go func() { polled <- c.get(key2, other, false) }()
	select {
	case got := <-polled:
		require.Nil(t, got, "the poll does not wait for the patch in progress")
	case <-time.After(testkit.Bound):
		close(release)
		t.Fatalf("the delta poll waited for the patch in progress (%s)", testkit.Bound)
	}
	last, points, ok := c.since(ent, first.root)
	require.True(t, ok)
	assert.Same(t, first, last, "answered from the document before the publication")
	assert.Empty(t, points, "a 304")
	assert.Zero(t, builds.Load(), "and does not patch again")

	// The control: the same request as one that waits is held in the
	// document's assembly (blocked on its sync.Once, behind the patch)
	// until the patch is done.
	waited := make(chan *indexBase, 1)
	go func() { waited <- c.get(key2, other, true) }()
	eventually(t, func() bool {
		return len(waited) > 0 || goroutineBlocked("registry.(*indexCache).get", "[sync.Mutex.Lock")
	}, "the waiting request blocking on the patch in progress (or returning)")
	require.Empty(t, waited, "control: a request that waits returned before the patch was done")
	require.Empty(t, patched, "the patch returned before it was released")
	close(release)
	done := <-patched
	assert.Same(t, done, <-waited, "control: the waiting request gets the patched document")
	assert.Zero(t, builds.Load())
	last, points, ok = c.since(ent, first.root)
	require.True(t, ok)
	assert.Same(t, done, last)
	assert.Len(t, points, 1, "the next poll gets the publication")
}

// goroutineBlocked reports whether a goroutine whose stack holds fn is in
// the state that starts with state (as runtime.Stack writes it, e.g.
// "[sync.Mutex.Lock").
func goroutineBlocked(fn, state string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		header, _, _ := bytes.Cut(g, []byte("\n"))
		if bytes.Contains(header, []byte(state)) && bytes.Contains(g, []byte(fn)) {
			return true
		}
	}
	return false
}

// The whole index goes through a real server segment by segment, with the
// Content-Length of the document: the client reads exactly the document
// (entries from several segments, in order). Control: the same segments
// sent with a length one byte short are cut by net/http, and what arrives
// is not an index.
func TestTheWholeIndexIsSentSegmentBySegmentWithItsLength(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	for m := range 130 {
		f.publish(fmt.Sprintf("M%03d", m), "1.0.0", "")
	}
	key := f.instance("acme", "pro", "Plugins/*")
	idx, got := f.index(key)
	require.Len(t, idx.Bundles, 130)
	assert.Equal(t, fmt.Sprint(len(got.body)), got.header.Get("Content-Length"))
	assert.Empty(t, got.header.Get("Transfer-Encoding"))
	var doc *indexBase
	f.server.index.mu.Lock()
	for _, ln := range f.server.index.lineages {
		if ln.last.etag == got.header.Get("ETag") {
			doc = ln.last
		}
	}
	f.server.index.mu.Unlock()
	require.NotNil(t, doc)
	require.GreaterOrEqual(t, len(doc.segs), 2, "the document is more than one segment")
	assert.True(t, bytes.Equal(doc.bytes(), got.body))

	short := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(doc.size-1))
		_ = writeBody(w, doc.segs)
	}))
	defer short.Close()
	resp, err := http.Get(short.URL)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	assert.Less(t, len(body), doc.size)
	assert.Error(t, json.Unmarshal(body, &client.Index{}), "control: a wrong length cuts the document")
}

// A request that reached the cache with an older generation than a newer
// request had moved it to (it read its snapshot or catalog before a
// publication) is answered with its entitlement's newest document, without
// assembling one; it used to assemble its own from nothing (O(modules),
// 61 % of the registry's CPU in a loaded run). Controls, run here: an
// entitlement with no document, and a generation older in one part but
// newer in the other (the newest document is not at least as new), each
// assemble from nothing as before, and what they assemble is not kept.
func TestALateRequestOfAnOlderGenerationGetsItsEntitlementsNewestDocumentWithoutAssembling(t *testing.T) {
	w := newSegWorld(1, 500)
	cat := w.step(0)
	allows := func(string, string) bool { return true }
	c := newIndexCache(0)
	const ent = "e"
	list1 := w.list
	old := indexKey{gen: indexGeneration{content: 1, catalog: 1}, entitlement: ent}
	first := c.get(old, func(p *indexBase) *indexBase { return patchIndex(p, list1, cat, "", allows) }, true)
	require.NotNil(t, first)
	cat2 := w.step(1)
	list2 := w.list
	newer := c.get(indexKey{gen: indexGeneration{content: 2, catalog: 2}, entitlement: ent},
		func(p *indexBase) *indexBase { return patchIndex(p, list2, cat2, "", allows) }, true)
	require.NotSame(t, first, newer)

	var builds atomic.Int32
	late := func(p *indexBase) *indexBase {
		builds.Add(1)
		require.Nil(t, p, "a late request assembles from nothing")
		return patchIndex(p, list1, cat, "", allows)
	}
	before := c.assemblies.Load()
	for _, wait := range []bool{true, false} {
		got := c.get(old, late, wait)
		assert.Same(t, newer, got, "the entitlement's newest document (wait=%v)", wait)
	}
	assert.Same(t, newer, c.newest(old))
	assert.Zero(t, builds.Load(), "nothing assembled for the late requests")
	assert.Equal(t, before, c.assemblies.Load())

	// Control: another entitlement has no document to be answered with.
	got := c.get(indexKey{gen: old.gen, entitlement: "other"}, late, true)
	assert.Equal(t, int32(1), builds.Load(), "control: no document of its own, assembled")
	assert.Equal(t, first.root, got.root, "what the older generation lists")
	assert.Nil(t, c.newest(indexKey{gen: old.gen, entitlement: "other"}), "and not kept")

	// Control: newer in content, older in catalog than the newest document.
	mixed := indexKey{gen: indexGeneration{content: 3, catalog: 1}, entitlement: ent}
	c.mu.Lock()
	c.current = indexGeneration{content: 4, catalog: 2}
	c.mu.Unlock()
	assert.Nil(t, c.newest(mixed))
	got = c.get(mixed, late, true)
	assert.Equal(t, int32(2), builds.Load(), "control: a generation the newest document is not at least as new as is assembled")
	assert.NotSame(t, newer, got)
}

// A snapshot older than one already seen is told apart (false) with the
// newest snapshot's content generation, which a late request asks
// indexCache.newest for: a document at least that new, never one older
// than what the request read. Control: the generation of the snapshot
// seen first is lower, and a lineage document of it is not at least the
// newest generation.
func TestAnOlderSnapshotIsToldApartWithTheNewestContentGeneration(t *testing.T) {
	var c contentGenerations
	g1, ok := c.of(1, [32]byte{1})
	require.True(t, ok)
	g2, ok := c.of(2, [32]byte{2})
	require.True(t, ok)
	require.Greater(t, g2, g1)
	same, ok := c.of(3, [32]byte{2})
	require.True(t, ok)
	assert.Equal(t, g2, same, "the same content keeps its generation")

	got, ok := c.of(1, [32]byte{1})
	assert.False(t, ok, "an older snapshot")
	assert.Equal(t, g2, got, "with the newest content generation")
	assert.False(t, indexGeneration{content: g1}.atLeast(indexGeneration{content: got}), "control: the older snapshot's generation is not at least it")
}
