package access

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAFoldThatCouldNotBeReadIsUndeterminedAndUndeterminedDenies(t *testing.T) {
	var unread *Fold
	d := unread.Decide("alice", "acme/doc", Read)
	assert.Equal(t, Undetermined, d)
	assert.False(t, d.Allows())
	assert.Equal(t, "Undetermined", d.String())
	assert.Equal(t, None, unread.Effective("alice", "acme/doc"))
	var zero Decision
	assert.Equal(t, Undetermined, zero, "the zero Decision must not allow")

	// Negative control: with the legs read, the same question is decided.
	f, err := NewFold(Snapshot{Assignments: []Assignment{
		{Scope: "acme", Subject: "alice", Roles: []RoleGrant{{Role: RoleViewer}}},
	}})
	require.NoError(t, err)
	assert.Equal(t, Allowed, f.Decide("alice", "acme/doc", Read))
	assert.True(t, f.Decide("alice", "acme/doc", Read).Allows())
	assert.Equal(t, Denied, f.Decide("alice", "acme/doc", Read|Update))
	assert.False(t, f.Decide("alice", "acme/doc", Read|Update).Allows())
}

// A request that names no permission is a caller's mistake (a Permission
// field left at its zero value), not a question the fold can answer yes to.
// Negative control, run by hand: with Decide's None check removed, bob (who
// holds nothing) was Allowed at acme/doc and at the root.
func TestAskingForNoPermissionGrantsNothing(t *testing.T) {
	f, err := NewFold(Snapshot{Assignments: []Assignment{
		{Scope: "acme", Subject: "alice", Roles: []RoleGrant{{Role: RoleAdmin}}},
	}})
	require.NoError(t, err)
	for _, user := range []string{"bob", "alice", ""} {
		for _, path := range []string{"acme/doc", "acme", "", "other/x"} {
			assert.Equal(t, Denied, f.Decide(user, path, None), "%q asking for no permission at %q", user, path)
		}
	}
	assert.Equal(t, Allowed, f.Decide("alice", "acme/doc", Read), "a permission named is decided as before")
}

func TestAnUnreadableScopeIsUndeterminedAtAndBelowItAndNowhereElse(t *testing.T) {
	viewers := []Assignment{
		{Scope: "", Subject: "alice", Roles: []RoleGrant{{Role: RoleViewer}}},
	}
	f, err := NewFold(Snapshot{Assignments: viewers, Unreadable: []string{"acme/docs"}})
	require.NoError(t, err)
	assert.Equal(t, Undetermined, f.Decide("alice", "acme/docs", Read))
	assert.Equal(t, Undetermined, f.Decide("alice", "acme/docs/q3/plan", Read))
	assert.Equal(t, None, f.Effective("alice", "acme/docs/q3"))
	assert.Equal(t, Allowed, f.Decide("alice", "acme/docsets", Read), "a sibling sharing the prefix is not below the scope")
	assert.Equal(t, Allowed, f.Decide("alice", "acme", Read), "above the scope is answered")

	// Negative control: without the unreadable scope the same question is
	// decided from the assignment.
	whole, err := NewFold(Snapshot{Assignments: viewers})
	require.NoError(t, err)
	assert.Equal(t, Allowed, whole.Decide("alice", "acme/docs/q3/plan", Read))

	root, err := NewFold(Snapshot{Assignments: viewers, Unreadable: []string{""}})
	require.NoError(t, err)
	assert.Equal(t, Undetermined, root.Decide("alice", "zeta", Read), "the root scope covers every path")
}
