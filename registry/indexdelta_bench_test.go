package registry

import (
	"fmt"
	"testing"

	"github.com/meshrx/meshrx/registry/landing"
)

// BenchmarkAPublicationAt100000Modules is what one publication costs the
// index of one entitlement at 100,000 modules: the patch of its document
// (what the first request after the publication waits for, and every other
// request of that entitlement with it) and the delta a poller then gets.
// The "full" case is an assembly from nothing, for scale; "snapshot" is the
// served snapshot's copy of the module list, which every publication still
// makes before the index is patched.
func BenchmarkAPublicationAt100000Modules(b *testing.B) {
	const n = 100_000
	mods := make([]landing.Record, n)
	packages := map[string]catalogPackage{}
	for i := range mods {
		name := fmt.Sprintf("Load.Module%06d", i)
		mods[i] = landing.Record{Module: name, Version: "1.0.0", SHA256: fmt.Sprintf("%064x", i), State: landing.Landed}
		packages[moduleKey(name)] = catalogPackage{name: name, tier: "free"}
	}
	cat := &catalogState{version: 1, packages: newLayered(packages)}
	allows := func(string, string) bool { return true }
	prev := patchIndex(nil, landing.Activation{Modules: mods}, cat, "", allows)
	next := make([]landing.Record, n)
	copy(next, mods)
	next[n/2].Version, next[n/2].SHA256 = "2.0.0", fmt.Sprintf("%064x", n+1)
	act := landing.Activation{Modules: next}
	b.Run("patch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			patchIndex(prev, act, cat, "", allows)
		}
	})
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			patchIndex(nil, act, cat, "", allows)
		}
	})
	// What a publication still costs outside the index: the served
	// snapshot's module list, copied whole with the one record replaced
	// (patchedAll), before any document is patched.
	rec := next[n/2]
	rec.ID = "2"
	ps := []patch{{key: moduleKey(rec.Module), rec: rec, found: true}}
	content := contentDigest(mods)
	b.Run("snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			patchedAll(mods, content, ps)
		}
	})
	after := patchIndex(prev, act, cat, "", allows)
	points := []historyPoint{{root: after.root, changed: after.changed}}
	b.Run("delta", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			deltaBody(after, prev.root, points)
		}
	})
}
