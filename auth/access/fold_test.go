package access

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Role permissions as the reference defines them, written out rather than
// read back from BuiltInRoles.
const (
	adminPerms  = Read | Create | Update | Delete | Comment | Execute | Thread | Api | Export | Compile
	editorPerms = Read | Create | Update | Comment | Execute | Thread | Api | Export | Compile
	viewerPerms = Read | Execute | Api
)

func grant(scope, subject string, roles ...string) Assignment {
	a := Assignment{Scope: scope, Subject: subject}
	for _, r := range roles {
		a.Roles = append(a.Roles, RoleGrant{Role: r})
	}
	return a
}

func deny(scope, subject string, roles ...string) Assignment {
	a := Assignment{Scope: scope, Subject: subject}
	for _, r := range roles {
		a.Roles = append(a.Roles, RoleGrant{Role: r, Denied: true})
	}
	return a
}

func member(m string, groups ...string) GroupMembership {
	return GroupMembership{Member: m, Groups: groups}
}

func mustFold(t testing.TB, s Snapshot) *Fold {
	t.Helper()
	f, err := NewFold(s)
	require.NoError(t, err)
	return f
}

type probe struct {
	user, path string
	want       Permission
}

func TestTheFoldFollowsTheReferenceWalk(t *testing.T) {
	cases := []struct {
		name   string
		snap   Snapshot
		probes []probe
	}{
		{
			name: "a role flows from its scope to every scope below, and nowhere else",
			snap: Snapshot{Assignments: []Assignment{grant("acme", "alice", RoleViewer)}},
			probes: []probe{
				{"alice", "acme", viewerPerms},
				{"alice", "acme/p/q", viewerPerms},
				{"alice", "", None},
				{"alice", "other/p", None},
				{"alice", "acmecorp/p", None}, // a prefix of a segment is not a scope
				{"bob", "acme/p", None},
			},
		},
		{
			name: "a root grant applies everywhere",
			snap: Snapshot{Assignments: []Assignment{grant("", "alice", RoleCommenter)}},
			probes: []probe{
				{"alice", "", Read | Comment | Api},
				{"alice", "x/y/z", Read | Comment | Api},
			},
		},
		{
			name: "breaking inheritance discards the roles gathered above",
			snap: Snapshot{
				Assignments: []Assignment{grant("acme", "alice", RoleEditor), grant("acme/secret/inner", "alice", RoleViewer)},
				Policies:    []Policy{{Scope: "acme/secret", BreaksInheritance: true}},
			},
			probes: []probe{
				{"alice", "acme/open", editorPerms},
				{"alice", "acme/secret", None},
				{"alice", "acme/secret/x", None},
				{"alice", "acme/secret/inner/x", viewerPerms},
			},
		},
		{
			name: "breaking inheritance also discards the cap gathered above",
			snap: Snapshot{
				Assignments: []Assignment{grant("acme", "alice", RoleEditor), grant("acme/lab", "bob", RoleEditor)},
				Policies: []Policy{
					{Scope: "acme", Update: ptr(false)},
					{Scope: "acme/lab", BreaksInheritance: true},
				},
			},
			probes: []probe{
				{"alice", "acme/doc", editorPerms &^ Update},
				{"alice", "acme/lab", None},
				{"bob", "acme/lab/doc", editorPerms}, // Update is possible again
				{"bob", "acme/doc", None},
			},
		},
		{
			name: "a cap limits roles granted at and below its scope",
			snap: Snapshot{
				Assignments: []Assignment{grant("acme", "alice", RoleEditor), grant("acme/x", "bob", RoleAdmin)},
				Policies:    []Policy{{Scope: "acme", Update: ptr(false), Create: ptr(false)}},
			},
			probes: []probe{
				{"alice", "acme/doc", editorPerms &^ (Update | Create | Compile)},
				{"bob", "acme/x/doc", adminPerms &^ (Update | Create | Compile)},
			},
		},
		{
			name: "a cap limits roles granted above its scope",
			snap: Snapshot{
				Assignments: []Assignment{grant("", "alice", RoleAdmin)},
				Policies:    []Policy{{Scope: "acme/archive", Delete: ptr(false)}},
			},
			probes: []probe{
				{"alice", "acme/doc", adminPerms},
				{"alice", "acme/archive/doc", adminPerms &^ Delete},
			},
		},
		{
			name: "public read grants Read to everyone below, past the cap",
			snap: Snapshot{Policies: []Policy{{Scope: "docs", PublicRead: true, Read: ptr(false)}}},
			probes: []probe{
				{"", "docs/intro", Read},
				{Anonymous, "docs", Read},
				{"alice", "docs/intro", Read},
				{"alice", "blog/post", None},
				{"", "", None},
			},
		},
		{
			name: "a deny beats a grant at the same scope",
			snap: Snapshot{Assignments: []Assignment{
				grant("acme", "alice", RoleEditor),
				deny("acme", "alice", RoleEditor),
			}},
			probes: []probe{{"alice", "acme", None}, {"alice", "acme/doc", None}},
		},
		{
			name: "a deny removes a role inherited from above, at its scope and below",
			snap: Snapshot{Assignments: []Assignment{
				grant("", "alice", RoleViewer),
				deny("acme/hr", "alice", RoleViewer),
			}},
			probes: []probe{
				{"alice", "acme/doc", viewerPerms},
				{"alice", "acme/hr", None},
				{"alice", "acme/hr/salaries", None},
			},
		},
		{
			name: "a grant below a deny adds the role again",
			snap: Snapshot{Assignments: []Assignment{
				grant("", "alice", RoleEditor),
				deny("acme", "alice", RoleEditor),
				grant("acme/team", "alice", RoleEditor),
			}},
			probes: []probe{
				{"alice", "acme/doc", None},
				{"alice", "acme/team/doc", editorPerms},
			},
		},
		{
			name: "a deny to a group removes the role whoever granted it",
			snap: Snapshot{
				Memberships: []GroupMembership{member("alice", "contractors")},
				Assignments: []Assignment{
					grant("acme", "alice", RoleEditor),
					deny("acme", "contractors", RoleEditor),
				},
			},
			probes: []probe{{"alice", "acme/doc", None}},
		},
		{
			name: "a deny removes only the role it names",
			snap: Snapshot{Assignments: []Assignment{
				grant("acme", "alice", RoleEditor, RoleViewer),
				deny("acme", "alice", RoleViewer),
			}},
			probes: []probe{{"alice", "acme/doc", editorPerms}},
		},
		{
			name: "groups are followed transitively",
			snap: Snapshot{
				Memberships: []GroupMembership{member("alice", "team"), member("team", "dept"), member("dept", "staff")},
				Assignments: []Assignment{grant("acme", "staff", RoleViewer)},
			},
			probes: []probe{
				{"alice", "acme/doc", viewerPerms},
				{"team", "acme/doc", viewerPerms},
				{"bob", "acme/doc", None},
			},
		},
		{
			name: "membership cycles terminate",
			snap: Snapshot{
				Memberships: []GroupMembership{member("alice", "a"), member("a", "b"), member("b", "c"), member("c", "a", "alice")},
				Assignments: []Assignment{grant("acme", "c", RoleViewer)},
			},
			probes: []probe{{"alice", "acme/doc", viewerPerms}},
		},
		{
			name: "a user is Admin in their own partition",
			snap: Snapshot{},
			probes: []probe{
				{"alice", "alice", adminPerms},
				{"alice", "alice/notes/today", adminPerms},
				{"alice", "ALICE/notes", adminPerms},
				{"bob", "alice/notes", None},
				{"alice", "bob/notes", None},
				{"alice", "acme/alice", None}, // only the first segment is a partition
			},
		},
		{
			name: "neither Anonymous nor Public owns a partition, and a blank user is not the root",
			snap: Snapshot{},
			probes: []probe{
				{"", "", None},
				{"", "Anonymous/x", None},
				{Anonymous, "Anonymous/x", None},
				{Public, "Public/x", None},
			},
		},
		{
			name: "own-partition Admin is added after that scope's denies, and a deeper deny removes it",
			snap: Snapshot{
				Assignments: []Assignment{deny("alice", "alice", RoleAdmin), deny("alice/shared", "alice", RoleAdmin)},
				Policies:    []Policy{{Scope: "alice", BreaksInheritance: true}},
			},
			probes: []probe{
				{"alice", "alice/notes", adminPerms},
				{"alice", "alice/shared/doc", None},
			},
		},
		{
			name: "a custom role grants its permissions",
			snap: Snapshot{
				Roles:       []Role{{ID: "Auditor", Permissions: Read | Export}},
				Assignments: []Assignment{grant("acme", "alice", "Auditor")},
			},
			probes: []probe{{"alice", "acme/ledger", Read | Export}},
		},
		{
			name:   "an unknown role grants nothing",
			snap:   Snapshot{Assignments: []Assignment{grant("acme", "alice", "Ghost")}},
			probes: []probe{{"alice", "acme/doc", None}},
		},
		{
			name:   "role ids are matched exactly",
			snap:   Snapshot{Assignments: []Assignment{grant("acme", "alice", "viewer")}},
			probes: []probe{{"alice", "acme/doc", None}},
		},
		{
			name: "every signed-in user holds what Public holds; Anonymous does not",
			snap: Snapshot{Assignments: []Assignment{
				grant("wiki", Public, RoleCommenter),
				grant("site", Anonymous, RoleViewer),
			}},
			probes: []probe{
				{"alice", "wiki/page", Read | Comment | Api},
				{Public, "wiki/page", Read | Comment | Api},
				{"", "wiki/page", None},
				{"", "site/home", viewerPerms},
				{"alice", "site/home", None},
			},
		},
		{
			name: "a deny on a user does not take away what Public holds",
			snap: Snapshot{Assignments: []Assignment{
				grant("", Public, RoleViewer),
				deny("wiki", "alice", RoleViewer),
				deny("intranet", Public, RoleViewer),
			}},
			probes: []probe{
				{"alice", "wiki/page", viewerPerms},
				{"alice", "intranet/page", None},
			},
		},
		{
			name: "Public's roles are capped by the same policies",
			snap: Snapshot{
				Assignments: []Assignment{grant("", Public, RoleEditor)},
				Policies:    []Policy{{Scope: "frozen", Update: ptr(false)}},
			},
			probes: []probe{{"alice", "frozen/doc", editorPerms &^ Update}},
		},
		{
			name: "paths and scopes ignore empty segments",
			snap: Snapshot{Assignments: []Assignment{grant("/acme//docs/", "alice", RoleViewer)}},
			probes: []probe{
				{"alice", "acme/docs/x", viewerPerms},
				{"alice", "/acme//docs/x/", viewerPerms},
				{"alice", "acme/x", None},
			},
		},
		{
			name: "subjects and scopes are case-sensitive",
			snap: Snapshot{Assignments: []Assignment{grant("acme", "alice", RoleViewer)}},
			probes: []probe{
				{"Alice", "acme/doc", None},
				{"alice", "ACME/doc", None},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := mustFold(t, c.snap)
			for _, p := range c.probes {
				assert.Equal(t, p.want, f.Effective(p.user, p.path), "Effective(%q, %q)", p.user, p.path)
			}
		})
	}
}

func TestNewFoldReportsEveryUnusableEntryWithATypedError(t *testing.T) {
	snap := Snapshot{
		Roles: []Role{
			{ID: " ", Permissions: Read},
			{ID: "Odd", Permissions: Read | 1<<20},
			{ID: RoleViewer, Permissions: All},
			{ID: RoleEditor, Permissions: editorPerms}, // same as the built-in: fine
			{ID: "Auditor", Permissions: Read},
			{ID: "Auditor", Permissions: Read | Export},
		},
		Memberships: []GroupMembership{member("", "g"), member("alice", "team", "")},
		Assignments: []Assignment{
			{Scope: "acme", Subject: "", Roles: []RoleGrant{{Role: RoleViewer}}},
			{Scope: "acme", Subject: "alice", Roles: []RoleGrant{{Role: ""}}},
			grant("acme/_Access", "alice", RoleViewer),
		},
		Policies: []Policy{{Scope: "acme"}, {Scope: "/acme/"}},
	}
	_, err := NewFold(snap)
	require.Error(t, err)

	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "every problem is reported, joined")
	var got []string
	for _, e := range joined.Unwrap() {
		var se *SnapshotError
		require.True(t, errors.As(e, &se), "%v", e)
		got = append(got, fmt.Sprintf("%s %d", se.Kind, se.Index))
	}
	assert.Equal(t, []string{
		"role 0", "role 1", "role 2", "role 5",
		"membership 0", "membership 1",
		"assignment 0", "assignment 1", "assignment 2",
		"policy 1",
	}, got)
	var first *SnapshotError
	require.True(t, errors.As(err, &first))
	assert.Contains(t, first.Error(), "blank id")

	// Negative control: the same snapshot without the bad entries builds.
	_, err = NewFold(Snapshot{
		Roles:       []Role{{ID: RoleEditor, Permissions: editorPerms}, {ID: "Auditor", Permissions: Read}},
		Memberships: []GroupMembership{member("alice", "team")},
		Assignments: []Assignment{grant("acme", "alice", RoleViewer)},
		Policies:    []Policy{{Scope: "acme"}},
	})
	assert.NoError(t, err)
}

func TestAFoldAnswersConcurrentQuestions(t *testing.T) {
	f := mustFold(t, Snapshot{
		Memberships: []GroupMembership{member("alice", "team")},
		Assignments: []Assignment{grant("acme", "team", RoleViewer), deny("acme/hr", "team", RoleViewer)},
	})
	var wg sync.WaitGroup
	results := make([][2]Permission, 8)
	for i := range results {
		wg.Go(func() {
			for range 200 {
				results[i] = [2]Permission{f.Effective("alice", "acme/doc"), f.Effective("alice", "acme/hr/doc")}
			}
		})
	}
	wg.Wait()
	for _, r := range results {
		assert.Equal(t, [2]Permission{viewerPerms, None}, r)
	}
}
