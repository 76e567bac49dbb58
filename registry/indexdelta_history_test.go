package registry

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
)

// From every document an entitlement's history holds, the delta to its
// newest, applied to that document, gives the newest, and its removals are
// entries that document listed: over random publications, first landings,
// uninstalls and tier changes (hiding and showing packages), with documents
// of two generations assembled from the same one and finishing in either
// order (the history's merge of what changed since). Controls run: with
// the removals not limited to entries held (every changed name no longer
// listed a removal) it fails at the removal check (seed 0, step 3); with
// the merge left out of advance (only what changed since the document it
// was patched from) it fails at "the delta applied is the newest" (seed 0,
// step 27).
func TestADeltaFromAnyDocumentInTheHistoryGivesTheNewestAndRemovesOnlyWhatItListed(t *testing.T) {
	const modules, steps = 60, 60
	for seed := range uint64(2) {
		rng := rand.New(rand.NewPCG(seed, 26))
		type mod struct {
			present, hidden bool
			version         int
		}
		state := make([]mod, modules)
		for i := range state {
			state[i] = mod{present: rng.IntN(3) > 0, hidden: rng.IntN(3) == 0, version: 1}
		}
		catVersion := uint64(0)
		build := func(prev *indexBase) *indexBase {
			var recs []landing.Record
			packages := map[string]catalogPackage{}
			for i, m := range state {
				name := fmt.Sprintf("M%03d", i)
				tier := ""
				if m.hidden {
					tier = "hidden"
				}
				packages[moduleKey(name)] = catalogPackage{name: name, tier: tier}
				if m.present {
					recs = append(recs, landing.Record{Module: name, Version: fmt.Sprintf("%d.0.0", m.version),
						SHA256: fmt.Sprintf("%064x", i*1000+m.version), State: landing.Landed, ID: "1"})
				}
			}
			catVersion++
			cat := &catalogState{version: catVersion, packages: newLayered(packages)} // changed nil: every package rechecked
			b := patchIndex(prev, newModuleList(recs), cat, "", func(_, tier string) bool { return tier != "hidden" })
			b.gen = indexGeneration{content: catVersion, catalog: catVersion}
			return b
		}
		mutate := func() {
			for range 1 + rng.IntN(4) {
				m := &state[rng.IntN(modules)]
				switch rng.IntN(4) {
				case 0:
					m.present = !m.present
				case 1, 2:
					m.hidden = !m.hidden
				default:
					m.version++
				}
			}
		}
		docs := map[[32]byte]map[string]client.IndexEntry{}
		listedBy := func(b *indexBase) map[string]client.IndexEntry {
			var idx client.Index
			require.NoError(t, json.Unmarshal(b.bytes(), &idx))
			out := map[string]client.IndexEntry{}
			for _, e := range idx.Bundles {
				out[e.Plugin] = e
			}
			return out
		}
		c := newIndexCache(4)
		const ent = "e"
		first := build(nil)
		docs[first.root] = listedBy(first)
		c.mu.Lock()
		c.advance(ent, nil, first)
		c.mu.Unlock()
		merged := 0
		for step := range steps {
			last := c.lineages[ent].last
			mutate()
			a := build(last)
			docs[a.root] = listedBy(a)
			order := []*indexBase{a}
			if rng.IntN(3) == 0 { // a second generation assembled from the same document
				mutate()
				b := build(last)
				docs[b.root] = listedBy(b)
				order = append(order, b)
				if rng.IntN(2) == 0 {
					order[0], order[1] = b, a // the newer finishes first: the older is dropped
				} else {
					merged++
				}
			}
			c.mu.Lock()
			for _, d := range order {
				c.advance(ent, last, d)
			}
			c.mu.Unlock()
			newest := c.lineages[ent].last
			want := docs[newest.root]
			for _, p := range c.lineages[ent].points {
				got, pts, ok := c.since(ent, p.root)
				require.True(t, ok)
				require.Same(t, newest, got)
				var d client.IndexDelta
				require.NoError(t, json.Unmarshal(deltaBody(got, p.root, pts), &d))
				held := docs[p.root]
				applied := map[string]client.IndexEntry{}
				for k, v := range held {
					applied[k] = v
				}
				for _, name := range d.Removed {
					require.Contains(t, held, name, "seed %d step %d: a removal of an entry the document since did not list", seed, step)
					delete(applied, name)
				}
				for _, e := range d.Bundles {
					applied[e.Plugin] = e
				}
				require.Equal(t, want, applied, "seed %d step %d: the delta applied is the newest", seed, step)
				require.Equal(t, len(want), d.Count)
			}
		}
		require.Positive(t, merged, "seed %d: the merge of two generations was exercised", seed)
	}
}
