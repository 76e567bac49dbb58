package access_test

import (
	"fmt"

	"github.com/meshrx/meshrx/auth/access"
)

// A fold is built once from a complete snapshot of the security legs and
// answers every question from memory. Alice is in group team-7; team-7 may
// edit acme, but a deny at acme/Finance takes Editor away there.
func ExampleFold_Decide() {
	fold, err := access.NewFold(access.Snapshot{
		Memberships: []access.GroupMembership{{Member: "alice", Groups: []string{"team-7"}}},
		Assignments: []access.Assignment{
			{Scope: "acme", Subject: "team-7", Roles: []access.RoleGrant{{Role: access.RoleEditor}}},
			{Scope: "acme/Finance", Subject: "team-7", Roles: []access.RoleGrant{{Role: access.RoleEditor, Denied: true}}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(fold.Decide("alice", "acme/roadmap", access.Update))
	fmt.Println(fold.Decide("alice", "acme/Finance/budget", access.Update))
	fmt.Println(fold.Decide("bob", "acme/roadmap", access.Read))

	// No fold (the legs could not be read in full) decides nothing: it denies.
	var unread *access.Fold
	fmt.Println(unread.Decide("alice", "acme/roadmap", access.Read))
	// Output:
	// Allowed
	// Denied
	// Denied
	// Undetermined
}
