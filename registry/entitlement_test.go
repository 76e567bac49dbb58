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
)

// referenceEntitlementKey is the key as it was built before it moved to a
// stack buffer (66bbd3a): the same canonical text through fmt, Join and hex.
func referenceEntitlementKey(res auth.Result) string {
	entries := make([]string, 0, len(res.Grant.Entries))
	for _, e := range res.Grant.Entries {
		pkg := e.Package
		if pkg == "" {
			pkg = auth.AllPackages
		}
		entries = append(entries, strings.ToLower(strings.TrimSpace(e.Source))+"/"+pkg+"@"+strings.ToLower(strings.TrimSpace(e.Plan)))
	}
	slices.Sort(entries)
	entries = slices.Compact(entries)
	var b strings.Builder
	b.WriteString("grant:")
	b.WriteString(strings.Join(entries, "\x00"))
	b.WriteString("\x00plan:")
	if res.Instance != nil {
		b.WriteString(strings.ToLower(strings.TrimSpace(res.Instance.Plan)))
	}
	b.WriteString("\x00ranks:")
	for _, id := range res.Ranks.IDs() {
		rank, _ := res.Ranks.RankOf(id)
		fmt.Fprintf(&b, "%s=%d/%t\x00", id, rank, res.Ranks.IsAllAccess(id))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// Two callers share a document exactly when their entitlement keys are
// equal, so the key built on the stack must tell apart exactly the
// Results the reference (fmt, Join, hex) told apart: over 3,000 random
// Results (entries in any order, case and surrounding space, duplicated,
// more than the stack holds; plans; ladders) two keys are equal if and
// only if the reference keys are. Control: a key that leaves out the
// entries' plans merges Results the reference tells apart.
func TestTheEntitlementKeyTellsApartExactlyTheEntitlementsItsCanonicalTextDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 4))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	ladders := []auth.PlanTierRanks{
		auth.NewPlanTierRanks(nil),
		auth.NewPlanTierRanks([]auth.PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 1}}),
		auth.NewPlanTierRanks([]auth.PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 1}, {ID: "Enterprise", Rank: 2, AllAccess: true}}),
	}
	random := func() auth.Result {
		n := rng.IntN(4)
		if rng.IntN(20) == 0 {
			n = 40 // more entries than the stack's spans, more text than its buffer
		}
		var entries []auth.GrantEntry
		for range n {
			entries = append(entries, auth.GrantEntry{
				Source:  pick("Plugins", "plugins", " PLUGINS ", "Themes", "Ärger"),
				Package: pick("", "*", "Charts", "charts", strings.Repeat("LongPackageName", 3)),
				Plan:    pick("", "pro", " Pro", "free", "ÉLITE"),
			})
		}
		res := auth.Result{Grant: auth.PluginGrant{InstanceID: "i", Entries: entries}, Ranks: ladders[rng.IntN(len(ladders))]}
		if rng.IntN(4) > 0 {
			res.Instance = &auth.Instance{ID: "i", Plan: pick("pro", " PRO ", "free", "")}
		}
		return res
	}
	results := make([]auth.Result, 3000)
	keys, refs := make([]string, len(results)), make([]string, len(results))
	for i := range results {
		results[i] = random()
		keys[i], refs[i] = entitlementKey(results[i]), referenceEntitlementKey(results[i])
	}
	byKey, byRef := map[string]string{}, map[string]string{}
	for i := range results {
		if r, ok := byKey[keys[i]]; ok {
			require.Equal(t, r, refs[i], "one key for two entitlements: %+v", results[i])
		}
		if k, ok := byRef[refs[i]]; ok {
			require.Equal(t, k, keys[i], "two keys for one entitlement: %+v", results[i])
		}
		byKey[keys[i]], byRef[refs[i]] = refs[i], keys[i]
	}
	assert.Greater(t, len(byRef), 100, "the Results are varied")

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
