package registry

import (
	"fmt"
	"maps"
	"testing"

	"github.com/meshrx/meshrx/registry/landing"
)

// BenchmarkAPublicationAt100000Modules is what one publication costs the
// index of one entitlement at 100,000 modules: the patch of its document
// (what the first request after the publication waits for, and every other
// request of that entitlement with it) and the delta a poller then gets.
// The "full" case is an assembly from nothing, for scale; "snapshot" is the
// served snapshot's patch of its module list, which every publication makes
// before the index is patched. The list patched is the one a snapshot keeps
// (the publication's chunk copied, the others shared), so "patch" walks
// only that chunk. "catalog" is the patch a catalog frame that changed one
// package makes: the chunk that may hold it is walked.
func BenchmarkAPublicationAt100000Modules(b *testing.B) {
	const n = 100_000
	mods := make([]landing.Record, n)
	packages := map[string]catalogPackage{}
	for i := range mods {
		name := fmt.Sprintf("Load.Module%06d", i)
		mods[i] = landing.Record{Module: name, Version: "1.0.0", SHA256: fmt.Sprintf("%064x", i), State: landing.Landed, ID: "1"}
		packages[moduleKey(name)] = catalogPackage{name: name, tier: "free"}
	}
	cat := &catalogState{version: 1, packages: newLayered(packages)}
	allows := func(string, string) bool { return true }
	list := newModuleList(mods)
	prev := patchIndex(nil, list, cat, "", allows)
	rec := mods[n/2]
	rec.ID, rec.Version, rec.SHA256 = "2", "2.0.0", fmt.Sprintf("%064x", n+1)
	ps := []patch{{key: moduleKey(rec.Module), rec: rec, found: true}}
	content := contentDigest(mods)
	next, _, _ := list.patched(content, ps)
	b.Run("patch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			patchIndex(prev, next, cat, "", allows)
		}
	})
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			patchIndex(nil, next, cat, "", allows)
		}
	})
	// What a publication costs outside the index: the served snapshot's
	// module list with the one record replaced.
	b.Run("snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			list.patched(content, ps)
		}
	})
	// A catalog frame that changed one package's node (its name and id
	// keys, as a live frame lists them): the chunk that may hold it is
	// walked again, the others skipped.
	changed := maps.Clone(packages)
	changedKey := moduleKey(mods[n/3].Module)
	p := changed[changedKey]
	p.tier = "pro"
	changed[changedKey] = p
	catFrame := &catalogState{version: 2, changed: []string{changedKey, changedKey}, packages: newLayered(changed)}
	b.Run("catalog", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			patchIndex(prev, list, catFrame, "", allows)
		}
	})
	after := patchIndex(prev, next, cat, "", allows)
	points := []historyPoint{pointAfter(prev, after.root, after.changed)}
	b.Run("delta", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			deltaBody(after, prev.root, points)
		}
	})
}
