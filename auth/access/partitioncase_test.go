package access

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestADenyACapOrAnUnreadableScopeOnAPartitionHoldsForEverySpellingOfItsName:
// a partition is one partition whatever the ASCII case of its name (the
// stores keep "ACME/doc" in acme's schema, and the fold makes kate Admin of
// "KATE"), so what restricts a partition restricts every spelling of it. A
// grant still grants only where it was written (narrower, never wider), and
// below the partition scopes keep their case, as node paths do.
//
// Negative control, run: with the scopes looked up by their exact spelling
// (the code before the fix) every "ACME/..." probe below but the grant's
// was Allowed: the deny, the cap, the broken inheritance and the unreadable
// scope at "acme" held only for "acme/...".
func TestADenyACapOrAnUnreadableScopeOnAPartitionHoldsForEverySpellingOfItsName(t *testing.T) {
	everyone := grant("", Public, RoleEditor)
	cases := []struct {
		name string
		snap Snapshot
		user string
		need Permission
	}{
		{"a deny at the partition", Snapshot{Assignments: []Assignment{grant("", "mallory", RoleViewer), deny("acme", "mallory", RoleViewer)}}, "mallory", Read},
		{"a policy cap at the partition", Snapshot{Assignments: []Assignment{everyone}, Policies: []Policy{{Scope: "acme", Read: ptr(false)}}}, "mallory", Read},
		{"a policy that breaks inheritance at the partition", Snapshot{Assignments: []Assignment{everyone}, Policies: []Policy{{Scope: "acme", BreaksInheritance: true}}}, "mallory", Read},
		{"an unreadable partition", Snapshot{Assignments: []Assignment{everyone}, Unreadable: []string{"acme"}}, "mallory", Read},
		{"a deny at the partition spelled in capitals, asked in lower case", Snapshot{Assignments: []Assignment{grant("", "mallory", RoleViewer), deny("ACME", "mallory", RoleViewer)}}, "mallory", Read},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := mustFold(t, c.snap)
			for _, path := range []string{"acme/doc", "ACME/doc", "Acme/doc", "aCmE"} {
				assert.False(t, f.Decide(c.user, path, c.need).Allows(), "Decide(%q, %q)", c.user, path)
			}
			assert.Equal(t, Allowed, f.Decide(c.user, "other/doc", c.need), "control: another partition is not restricted")
		})
	}

	t.Run("a grant grants only where it was written", func(t *testing.T) {
		f := mustFold(t, Snapshot{
			Assignments: []Assignment{grant("acme", "alice", RoleViewer), grant("ACME", "bob", RoleViewer)},
			Policies:    []Policy{{Scope: "acme", PublicRead: true}},
		})
		assert.Equal(t, Allowed, f.Decide("alice", "acme/doc", Read))
		assert.Equal(t, Denied, f.Decide("alice", "ACME/doc", Update), "no grant follows another spelling")
		assert.Equal(t, Denied, f.Decide("bob", "acme/doc", Update))
		assert.Equal(t, Allowed, f.Decide("bob", "ACME/doc", Read))
		assert.Equal(t, Denied, f.Decide(Anonymous, "ACME/doc", Read), "nor does a public read")
		assert.Equal(t, Allowed, f.Decide(Anonymous, "acme/doc", Read))
	})

	t.Run("below the partition a scope keeps its case", func(t *testing.T) {
		f := mustFold(t, Snapshot{Assignments: []Assignment{grant("", "mallory", RoleViewer), deny("acme/Docs", "mallory", RoleViewer)}})
		assert.Equal(t, Denied, f.Decide("mallory", "ACME/Docs/x", Read))
		assert.Equal(t, Allowed, f.Decide("mallory", "acme/docs/x", Read), "acme/docs is another scope than acme/Docs")
	})
}
