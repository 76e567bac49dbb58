package access

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTheFoldKeepsNoSubjectsForUsersItHasNoMembershipsOf: a Fold lives until
// the next security write, and Decide is asked about whatever user a caller
// names, so what it keeps per user must be bounded by its snapshot, not by
// the names asked about. A user with no membership has no groups to walk:
// nothing is kept for it.
//
// Negative control, run: with every asked-about user kept (the code before
// the fix) the fold held 10,001 subject sets after these questions.
func TestTheFoldKeepsNoSubjectsForUsersItHasNoMembershipsOf(t *testing.T) {
	f := mustFold(t, Snapshot{
		Memberships: []GroupMembership{member("alice", "staff")},
		Assignments: []Assignment{grant("docs", "staff", RoleViewer), deny("docs/secret", "staff", RoleViewer)},
	})
	for i := range 10_000 {
		assert.Equal(t, Denied, f.Decide(fmt.Sprintf("stranger%05d", i), "docs/x", Read))
	}
	assert.Equal(t, Allowed, f.Decide("alice", "docs/x", Read), "a member still reaches its groups")
	assert.Equal(t, Denied, f.Decide("alice", "docs/secret/x", Read), "and their denies")

	kept := 0
	f.subjects.Range(func(any, any) bool { kept++; return true })
	assert.LessOrEqual(t, kept, 1, "subject sets kept: at most one per member of the snapshot")
}
