package auth

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
)

// idTaker calls one function of the package with an instance id.
type idTaker func(ctx context.Context, r *Instances, id string) error

// instanceIDTakers is every exported function of the package that takes an
// instance id, called with it. TestTheInstanceIdTablesNameEveryFunctionThatTakesOne
// fails when a function is added that is in neither this table nor
// instanceIDExempt.
func instanceIDTakers() map[string]idTaker {
	return map[string]idTaker{
		"ValidateInstanceID": func(_ context.Context, _ *Instances, id string) error { return ValidateInstanceID(id) },
		"Register": func(ctx context.Context, r *Instances, id string) error {
			_, err := r.Register(ctx, id, "x", "")
			return err
		},
		"Instance": func(ctx context.Context, r *Instances, id string) error { _, err := r.Instance(ctx, id); return err },
		"IssueKey": func(ctx context.Context, r *Instances, id string) error { _, err := r.IssueKey(ctx, id); return err },
		"RotateKey": func(ctx context.Context, r *Instances, id string) error {
			_, err := r.RotateKey(ctx, id)
			return err
		},
		"RevokeKey": func(ctx context.Context, r *Instances, id string) error {
			return r.RevokeKey(ctx, id, strings.Repeat("0", 64))
		},
		"Disable": func(ctx context.Context, r *Instances, id string) error { return r.Disable(ctx, id) },
		"Enable":  func(ctx context.Context, r *Instances, id string) error { return r.Enable(ctx, id) },
		"SetGrant": func(ctx context.Context, r *Instances, id string) error {
			_, err := r.SetGrant(ctx, id, "ops", "Plugins")
			return err
		},
	}
}

// instanceIDExempt names the functions that take an id but are no gate of
// their own, and why.
var instanceIDExempt = map[string]string{
	"InstancePath":  "builds the path of an id its caller has validated",
	"GrantPath":     "builds the path of an id its caller has validated",
	"TierPath":      "a plan id, canonicalised: TestAPlanTierIdIsReadUnderTheRuleItIsWrittenUnder",
	"ParsePlanTier": "a plan id: TestAPlanTierIdIsReadUnderTheRuleItIsWrittenUnder",
}

// TestAnInstanceIdIsLowerCaseAtEveryWriteAndEveryRead: the store keeps
// "Registry/Instances/Acme" and "Registry/Instances/acme" as two nodes
// (paths below the partition keep their case), while the name rule
// (mesh.EqualNames) and every query read them as one name. So an id is
// lower case: every function that takes one refuses an upper-case letter
// with an *InstanceIDError naming the id and writes nothing, and the
// authenticator refuses an index node, written by another writer, that
// leads to such an id (503, never the instance).
//
// Negative control, run by hand: with ValidateInstanceID accepting
// upper-case letters (the code before), Register("Acme") beside "acme"
// succeeded (two instances differing only in case), every other function
// answered *UnknownInstanceError or nil instead of *InstanceIDError, and
// the hand-written index node authenticated the key as instance "Acme".
func TestAnInstanceIdIsLowerCaseAtEveryWriteAndEveryRead(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	refused := []string{"Acme", "ACME", "acmE", "a-B.c_1"}
	before := f.store.Stats().Nodes
	for name, call := range instanceIDTakers() {
		for _, id := range refused {
			err := call(ctx, f.reg, id)
			var idErr *InstanceIDError
			if assert.ErrorAs(t, err, &idErr, "%s(%q)", name, id) {
				assert.Equal(t, id, idErr.ID, "%s(%q)", name, id)
				assert.Contains(t, idErr.Problem, "lower case", "%s(%q)", name, id)
			}
		}
	}
	assert.Equal(t, before, f.store.Stats().Nodes, "a refused id writes nothing")

	// Control: the canonical spelling reaches the instance (beta, so that
	// a rotation or a disable leaves acme's key as it is).
	_, err := f.reg.Register(ctx, "beta", "Beta", "")
	require.NoError(t, err)
	for name, call := range instanceIDTakers() {
		err := call(ctx, f.reg, "beta")
		var idErr *InstanceIDError
		assert.False(t, errors.As(err, &idErr), "%s(%q): %v", name, "beta", err)
	}

	// The reader: an index node written by hand, leading to an instance
	// node at an upper-case id that lists the key.
	key, err := NewKey()
	require.NoError(t, err)
	hash := HashKey(key)
	index, err := encodeContent(keyIndexContent{KeyHash: hash, Instance: "Acme"})
	require.NoError(t, err)
	inst, err := encodeInstance(&Instance{ID: "Acme", Name: "Acme", Plan: "pro", KeyHashes: []string{hash}})
	require.NoError(t, err)
	_, err = f.store.Put(ctx, mesh.Node{Path: KeyIndexPath(hash), NodeType: KeyIndexNodeType, Content: index})
	require.NoError(t, err)
	_, err = f.store.Put(ctx, mesh.Node{Path: InstancePath("Acme"), NodeType: InstanceNodeType, Content: inst})
	require.NoError(t, err)
	res := first(t, f.authenticator(nil).Authenticate(bearer(key)))
	assert.Nil(t, res.Instance, "an index node naming an upper-case id leads to no instance")
	assert.Contains(t, res.Unavailable, StageInstanceKey, "it is an unreadable index node: 503, as any other")
	// Control: the fixture's own key, issued for "acme", authenticates.
	res = first(t, f.authenticator(nil).Authenticate(bearer(f.key)))
	require.NotNil(t, res.Instance)
	assert.Equal(t, "acme", res.Instance.ID)
}

// TestTheInstanceIdTablesNameEveryFunctionThatTakesOne: every exported
// function or method of the package (non-test files) with a string
// parameter named id or instanceID is in instanceIDTakers or
// instanceIDExempt, and every name there is such a function: a function
// added later without its row fails here.
// Negative control, run by hand: with "Disable" taken out of the table, the
// test failed naming Disable.
func TestTheInstanceIdTablesNameEveryFunctionThatTakesOne(t *testing.T) {
	var found []string
	for _, f := range testkit.PackageFiles(t, ".") {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() {
				continue
			}
			for _, field := range fn.Type.Params.List {
				typ, ok := field.Type.(*ast.Ident)
				if !ok || typ.Name != "string" {
					continue
				}
				if slices.ContainsFunc(field.Names, func(n *ast.Ident) bool { return n.Name == "id" || n.Name == "instanceID" }) {
					found = append(found, fn.Name.Name)
				}
			}
		}
	}
	takers := instanceIDTakers()
	for _, name := range found {
		_, taken := takers[name]
		_, exempt := instanceIDExempt[name]
		assert.True(t, taken || exempt, "%s takes an instance id: give it a row in instanceIDTakers (or instanceIDExempt, with the reason)", name)
	}
	for name := range takers {
		assert.Contains(t, found, name, "instanceIDTakers names %s, which takes no id", name)
	}
	for name := range instanceIDExempt {
		assert.Contains(t, found, name, "instanceIDExempt names %s, which takes no id", name)
	}
}

// TestAPlanTierIdIsReadUnderTheRuleItIsWrittenUnder: ParsePlanTier (every
// reader of the ladder: PlanTierLadder, KnownPlans) refuses exactly the ids
// SetPlanTier refuses, with the same *PlanTierError, and reads the others
// under the canonical id SetPlanTier writes them at. A tier node another
// writer put at an id SetPlanTier refuses is left out of the ladder.
//
// Negative control, run by hand: with ParsePlanTier only trimming and
// refusing blank (the code before), every refused id but the blank ones
// was read (the ladder listed "prö", "a\x00b", "pro plus", "_x"...), and a
// case variant was read as "Pro", not "pro".
func TestAPlanTierIdIsReadUnderTheRuleItIsWrittenUnder(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	content := json.RawMessage(`{"rank":1}`)
	for _, id := range []string{
		"gold", "Gold", "GOLD", " gold ", "gold\n", "gold-2.eu_1",
		"", "  ", "a/b", "/gold", "a\x00b", "prö", "\u212Aelvin", "gold\u017F", "pro plus", "_x", ".x", "-x",
		strings.Repeat("g", 64), strings.Repeat("g", 65),
	} {
		setErr := f.reg.SetPlanTier(ctx, PlanTier{ID: id, Rank: 1})
		tier, parseErr := ParsePlanTier(id, content)
		if setErr != nil {
			var set, parsed *PlanTierError
			require.ErrorAs(t, setErr, &set, "SetPlanTier(%q)", id)
			if assert.ErrorAs(t, parseErr, &parsed, "ParsePlanTier(%q) reads what SetPlanTier(%q) refuses: %v", id, id, set) {
				assert.Equal(t, *set, *parsed, "one refusal for %q", id)
			}
			continue
		}
		if assert.NoError(t, parseErr, "ParsePlanTier(%q) refuses what SetPlanTier wrote", id) {
			assert.Equal(t, canonicalPlan(id), tier.ID, "ParsePlanTier(%q)", id)
			_, written := mesh.SplitPath(TierPath(id))
			assert.Equal(t, written, tier.ID, "read under the id it is written at: %q", id)
		}
	}

	// The ladder: tier nodes another writer put where the store takes them.
	for _, id := range []string{"prö", "pro plus", "_x", "Silver"} {
		_, err := f.store.Put(ctx, mesh.Node{Path: TierNamespace + "/" + id, NodeType: TierNodeType, Content: content})
		require.NoError(t, err, "put %q", id)
	}
	known, err := f.reg.KnownPlans(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"free", strings.Repeat("g", 64), "gold", "gold-2.eu_1", "silver", "pro", "enterprise"}, known,
		"the ladder holds what SetPlanTier writes, in its canonical form, and nothing it refuses")
}
