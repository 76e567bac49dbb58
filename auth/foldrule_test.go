package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
)

// TestEveryNameAuthComparesFoldsASCIICaseOnly: each place of auth that
// compares a name case-insensitively takes another ASCII case of it and
// refuses a spelling that only Unicode folding makes the same (U+017F LONG
// S for 's', U+212A KELVIN SIGN for 'k'): the name rule of mesh.EqualNames.
//
// Negative control, run by hand: with permissionNamed on strings.EqualFold
// (the code before), a Role listing "ſync" was read as granting Sync
// instead of being left out.
func TestEveryNameAuthComparesFoldsASCIICaseOnly(t *testing.T) {
	key, err := NewKey()
	require.NoError(t, err)
	basic := " " + base64.StdEncoding.EncodeToString([]byte("u:"+key))
	ranks := NewPlanTierRanks([]PlanTier{{ID: "basic", Rank: 1}})
	entry := GrantEntry{Source: "Plugins", Package: "desk"}
	kate, err := access.NewFold(access.Snapshot{})
	require.NoError(t, err)

	cases := []struct {
		place   string
		ascii   string // another ASCII case: the same name
		unicode string // the same only under Unicode folding
		same    func(name string) bool
	}{
		{"the Authorization scheme (KeyFromHeader)", "BASIC", "Ba\u017Fic",
			func(s string) bool { _, ok := KeyFromHeader(s + basic); return ok }},
		{"a permission name in a Role node", "SYNC", "\u017Fync",
			func(s string) bool {
				p, ok := parsePermissions(json.RawMessage(`["` + s + `"]`))
				return ok && p == access.Sync
			}},
		{"a plan id (canonicalPlan)", "BASIC", "ba\u017Fic",
			func(s string) bool { _, ok := ranks.RankOf(s); return ok }},
		{"a grant entry's source", "PLUGINS", "Plugin\u017F",
			func(s string) bool { return entry.Matches(s, "desk") }},
		{"a grant entry's package", "DESK", "de\u017F\u212A",
			func(s string) bool { return entry.Matches("Plugins", s) }},
		{"a property of a tier node", "ALLACCESS", "allAcce\u017F\u017F",
			func(s string) bool {
				tier, err := ParsePlanTier("pro", json.RawMessage(`{"rank":1,"`+s+`":true}`))
				return err == nil && tier.AllAccess
			}},
		{"a security node type (BuildAccessSnapshot)", "ACCESSASSIGNMENT", "Acce\u017F\u017FAssignment",
			func(s string) bool {
				content, _ := json.Marshal(assignment("ops", roleGrant{Role: access.RoleViewer}))
				snap, _, _ := BuildAccessSnapshot([]mesh.Node{{Path: "acme/_Access/ops", NodeType: s, Content: content}}, nil)
				return len(snap.Assignments) == 1
			}},
		{"a gated type (FoldSource.GatedTypes)", "PLUGINLISTING", "PluginLi\u017Fting",
			func(s string) bool {
				snap, _, _ := BuildAccessSnapshot([]mesh.Node{{Path: "acme/x", NodeType: s}}, []string{gatedType})
				return len(snap.Gates) == 1
			}},
		{"a user's own partition (access.Fold)", "KATE", "\u212Aate",
			func(s string) bool { return kate.Decide(s, "kate/doc", access.Update) == access.Allowed }},
		{"the user named after the Admin partition (FoldSource.Decide)", "ADMIN", "",
			func(s string) bool {
				return adminGuarded(t, s)
			}},
	}
	for _, c := range cases {
		t.Run(c.place, func(t *testing.T) {
			assert.True(t, c.same(c.ascii), "%q is the same name", c.ascii)
			if c.unicode != "" {
				require.True(t, strings.EqualFold(c.ascii, c.unicode), "control: Unicode folding makes %q the same", c.unicode)
				assert.False(t, c.same(c.unicode), "%q is another name", c.unicode)
			}
		})
	}
}

// adminGuarded reports whether FoldSource.Decide refuses user, granted Admin
// at the root, everything in the Admin partition by its name alone.
func adminGuarded(t *testing.T, user string) bool {
	s := newSecurityStore(t)
	putNode(t, s, "_Access/"+fmt.Sprintf("%x", user), AssignmentNodeType, assignment(user, roleGrant{Role: access.RoleAdmin}))
	fs := &FoldSource{Reader: s}
	return fs.Decide(context.Background(), user, GlobalAdminScope+"/Tiers", access.Read) == access.Denied
}

// TestIsGlobalAdminAnswersAsDecideAtTheAdminScopeForEverySpelling:
// IsGlobalAdmin names the same users as Decide's guard (the name rule:
// ASCII case, nothing trimmed), so a user both ask about gets one answer.
// No letter of "Admin" has a Unicode fold outside ASCII, so
// strings.EqualFold never made anyone global admin; but IsGlobalAdmin also
// trimmed Unicode space, so a user granted Admin at the root under the id
// " Admin" (another name to the fold and to Decide) was refused by
// IsGlobalAdmin while Decide allowed them everything at Admin.
//
// Negative control, run by hand: with strings.EqualFold(strings.TrimSpace(
// user), ...) in IsGlobalAdmin (the code before), " Admin", "Admin\t" and
// "\u00a0Admin" were Denied by IsGlobalAdmin and Allowed by Decide.
func TestIsGlobalAdminAnswersAsDecideAtTheAdminScopeForEverySpelling(t *testing.T) {
	s := newSecurityStore(t)
	users := []string{"ops", "Admin", "ADMIN", "admin", " Admin", "Admin\t", "\u00a0Admin", "\u212Admin", "Admi\u0274"}
	for i, user := range users {
		putNode(t, s, fmt.Sprintf("_Access/u%d", i), AssignmentNodeType, assignment(user, roleGrant{Role: access.RoleAdmin}))
	}
	fs := &FoldSource{Reader: s}
	ctx := context.Background()
	admin, _ := access.BuiltInRole(access.RoleAdmin)
	for _, user := range users {
		assert.Equal(t, fs.Decide(ctx, user, GlobalAdminScope, admin.Permissions), fs.IsGlobalAdmin(ctx, user), "user %q", user)
	}
	// Controls: the guard holds for every ASCII case, and a grant makes a
	// global admin.
	assert.Equal(t, access.Denied, fs.IsGlobalAdmin(ctx, "aDmIn"))
	assert.Equal(t, access.Allowed, fs.IsGlobalAdmin(ctx, "ops"))
}
