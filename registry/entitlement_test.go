package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/mesh"
)

// referenceEntitlementKey is the canonical text through fmt, Join and hex,
// each field folded with the access check's own comparison form: source
// and package by mesh.FoldName untrimmed (GrantEntry.Matches compares them
// with mesh.EqualNames), plans trimmed and by mesh.FoldName (the ladder's
// canonical plan). TestTheEntitlementKeyTellsApart... checks this
// reference against auth.Result.Allows itself.
func referenceEntitlementKey(res auth.Result) string {
	return canonicalEntitlementText(res, mesh.FoldName, mesh.FoldName)
}

// oldEntitlementKey is the key before this fix, for controls: source and
// plans trimmed and lowered by Unicode rules, the package as given.
func oldEntitlementKey(res auth.Result) string {
	lower := func(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
	return canonicalEntitlementText(res, lower, func(s string) string { return s })
}

// canonicalEntitlementText hashes the canonical text with names folded by
// foldName (source), foldPkg (package) and plans trimmed then foldName'd.
func canonicalEntitlementText(res auth.Result, foldName, foldPkg func(string) string) string {
	entries := make([]string, 0, len(res.Grant.Entries))
	for _, e := range res.Grant.Entries {
		pkg := e.Package
		if pkg == "" {
			pkg = auth.AllPackages
		}
		entries = append(entries, foldName(e.Source)+"/"+foldPkg(pkg)+"@"+foldName(strings.TrimSpace(e.Plan)))
	}
	slices.Sort(entries)
	entries = slices.Compact(entries)
	var b strings.Builder
	b.WriteString("grant:")
	b.WriteString(strings.Join(entries, "\x00"))
	b.WriteString("\x00plan:")
	if res.Instance != nil {
		b.WriteString(foldName(strings.TrimSpace(res.Instance.Plan)))
	}
	b.WriteString("\x00ranks:")
	for _, id := range res.Ranks.IDs() {
		rank, _ := res.Ranks.RankOf(id)
		fmt.Fprintf(&b, "%s=%d/%t\x00", id, rank, res.Ranks.IsAllAccess(id))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// The names the random Results and the probes of Allows draw from: ASCII
// case and space variants, and letters Unicode lower-cases into ASCII
// ones (the Kelvin sign U+212A to 'k', U+0130 to "i\u0307") or folds among
// themselves ('Ä').
var (
	testSources  = []string{"Plugins", "plugins", " PLUGINS ", "Themes", "Ärger", "ärger", "Kit", "\u212Ait"}
	testPackages = []string{"", "*", "Charts", "charts", strings.Repeat("LongPackageName", 3), "Kelvin", "\u212Aelvin"}
	testPlans    = []string{"", "pro", " Pro", "free", "ÉLITE", "élite", "kit", "\u212Ait", "KIT"}
	testTiers    = []string{"", "free", "pro", "kit", "\u212Ait", "élite", "ÉLITE", "enterprise"}
)

// allowsTable is what the access check decides for res over every probe
// (source, package, package tier): two Results an index document may be
// shared between must have equal tables.
func allowsTable(res auth.Result) string {
	var b strings.Builder
	for _, src := range testSources {
		for _, pkg := range testPackages[2:] {
			for _, tier := range testTiers {
				if res.Allows(src, pkg, tier) {
					b.WriteByte('1')
				} else {
					b.WriteByte('0')
				}
			}
		}
	}
	return b.String()
}

// Two callers share a document exactly when their entitlement keys are
// equal, so the key must tell apart exactly what the access check does.
// The reference is defined by auth.Result.Allows: over 3,000 random
// Results (entries in any order, ASCII case and surrounding space,
// non-ASCII letters including the Kelvin sign, duplicated, more than the
// stack holds; plans; ladders) two Results with one reference key have
// the same Allows table over every probe (so the reference merges nothing
// the access check tells apart), and two keys are equal if and only if
// the reference keys are. Controls: the key before this fix (Unicode lower
// case) gives one key to Results whose Allows tables differ; a key that
// leaves out the entries' plans merges Results the reference tells apart.
func TestTheEntitlementKeyTellsApartExactlyTheEntitlementsItsCanonicalTextDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 4))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	ladders := []auth.PlanTierRanks{
		auth.NewPlanTierRanks(nil),
		auth.NewPlanTierRanks([]auth.PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 1}}),
		auth.NewPlanTierRanks([]auth.PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 1}, {ID: "Enterprise", Rank: 2, AllAccess: true}}),
		auth.NewPlanTierRanks([]auth.PlanTier{{ID: "free", Rank: 0}, {ID: "kit", Rank: 1}, {ID: "élite", Rank: 2}}),
	}
	random := func() auth.Result {
		n := rng.IntN(4)
		if rng.IntN(20) == 0 {
			n = 40 // more entries than the stack's spans, more text than its buffer
		}
		var entries []auth.GrantEntry
		for range n {
			entries = append(entries, auth.GrantEntry{
				Source:  pick(testSources...),
				Package: pick(testPackages...),
				Plan:    pick(testPlans...),
			})
		}
		res := auth.Result{Grant: auth.PluginGrant{InstanceID: "i", Entries: entries}, Ranks: ladders[rng.IntN(len(ladders))]}
		if rng.IntN(8) > 0 {
			res.Instance = &auth.Instance{ID: "i", Plan: pick("pro", " PRO ", "free", "", "kit", "\u212Ait", "élite", "ÉLITE")}
		}
		return res
	}
	results := make([]auth.Result, 3000)
	keys, refs, tables := make([]string, len(results)), make([]string, len(results)), make([]string, len(results))
	for i := range results {
		results[i] = random()
		keys[i], refs[i], tables[i] = entitlementKey(results[i]), referenceEntitlementKey(results[i]), allowsTable(results[i])
	}
	byKey, byRef := map[string]string{}, map[string]string{}
	tableOfRef := map[string]string{}
	for i := range results {
		if r, ok := byKey[keys[i]]; ok {
			require.Equal(t, r, refs[i], "one key for two entitlements: %+v", results[i])
		}
		if k, ok := byRef[refs[i]]; ok {
			require.Equal(t, k, keys[i], "two keys for one entitlement: %+v", results[i])
		}
		byKey[keys[i]], byRef[refs[i]] = refs[i], keys[i]
		if !results[i].Authenticated() {
			continue // the route keys only authenticated callers
		}
		if tb, ok := tableOfRef[refs[i]]; ok {
			require.Equal(t, tb, tables[i], "the reference merges Results the access check tells apart: %+v", results[i])
		}
		tableOfRef[refs[i]] = tables[i]
	}
	assert.Greater(t, len(byRef), 100, "the Results are varied")
	assert.Contains(t, strings.Join(tables, ""), "1", "the probes allow something")

	// Control: the old key merges Results whose Allows tables differ.
	oldMerged := 0
	tableOfOld := map[string]string{}
	for i := range results {
		if !results[i].Authenticated() {
			continue
		}
		k := oldEntitlementKey(results[i])
		if tb, ok := tableOfOld[k]; ok && tb != tables[i] {
			oldMerged++
		}
		tableOfOld[k] = tables[i]
	}
	assert.Positive(t, oldMerged, "control: the Unicode lower-case key shares one key between different entitlements")

	// Control: without the entries' plans, distinct entitlements merge.
	withoutPlans := func(res auth.Result) string {
		res.Grant.Entries = slices.Clone(res.Grant.Entries)
		for i := range res.Grant.Entries {
			res.Grant.Entries[i].Plan = ""
		}
		return entitlementKey(res)
	}
	merged := 0
	seen := map[string]string{}
	for i := range results {
		k := withoutPlans(results[i])
		if r, ok := seen[k]; ok && r != refs[i] {
			merged++
		}
		seen[k] = refs[i]
	}
	assert.Positive(t, merged, "control: a key without the entries' plans merges entitlements")
}

// A plan "kit" and "\u212Ait" (Kelvin sign, which Unicode lower-cases to
// 'k') are different plans to the access check, which folds ASCII only: a
// kit-tier package is allowed to the first caller and not the second. So
// their entitlement keys differ and they never share a cached document.
// Control: the old key (Unicode lower case) gives both one key.
func TestCallersOnPlansThatDifferByAKelvinSignGetDifferentEntitlementKeys(t *testing.T) {
	ladder := auth.NewPlanTierRanks([]auth.PlanTier{{ID: "free", Rank: 0}, {ID: "kit", Rank: 1}})
	caller := func(plan string) auth.Result {
		return auth.Result{
			Instance: &auth.Instance{ID: "i", Plan: plan},
			Grant:    auth.PluginGrant{InstanceID: "i", Entries: []auth.GrantEntry{{Source: "plugins", Package: "*", Plan: plan}}},
			Ranks:    ladder,
		}
	}
	kit, kelvin := caller("kit"), caller("\u212Ait")
	require.True(t, kit.Allows("plugins", "charts", "kit"))
	require.False(t, kelvin.Allows("plugins", "charts", "kit"), "the access check tells the plans apart")
	assert.NotEqual(t, entitlementKey(kit), entitlementKey(kelvin))

	// The same for a source and a package that differ by a Kelvin sign.
	src := func(source, pkg string) auth.Result {
		r := caller("kit")
		r.Grant.Entries = []auth.GrantEntry{{Source: source, Package: pkg}}
		return r
	}
	require.NotEqual(t, src("kit", "*").Allows("kit", "x", ""), src("\u212Ait", "*").Allows("kit", "x", ""))
	assert.NotEqual(t, entitlementKey(src("kit", "*")), entitlementKey(src("\u212Ait", "*")))
	assert.Equal(t, entitlementKey(src("KIT", "Charts")), entitlementKey(src("kit", "charts")), "ASCII case still shares")

	// Control: the old fold gives the Kelvin pair one key.
	assert.Equal(t, oldEntitlementKey(kit), oldEntitlementKey(kelvin), "control: Unicode lower case merges the plans")
	assert.Equal(t, oldEntitlementKey(src("kit", "*")), oldEntitlementKey(src("\u212Ait", "*")), "control: and the sources")
}
