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
	f, err := NewFold(Snapshot{Assignments: []AccessAssignment{
		{Scope: "acme", Subject: "alice", Roles: []RoleGrant{{Role: RoleViewer}}},
	}})
	require.NoError(t, err)
	assert.Equal(t, Allowed, f.Decide("alice", "acme/doc", Read))
	assert.True(t, f.Decide("alice", "acme/doc", Read).Allows())
	assert.Equal(t, Denied, f.Decide("alice", "acme/doc", Read|Update))
	assert.False(t, f.Decide("alice", "acme/doc", Read|Update).Allows())
	assert.Equal(t, Allowed, f.Decide("bob", "acme/doc", None), "asking for nothing is allowed")
}
