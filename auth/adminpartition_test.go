package auth

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
)

// TestAUserNamedAfterTheAdminPartitionHoldsNothingInIt: the fold makes every
// user Admin of the partition named like them, and IsGlobalAdmin refuses a
// user called "admin" for that reason; but Decide, which a service asks
// before a write to Admin/Tiers (the plan ladder) or to the Admin
// notifications, still gave that user every permission there. A user named
// after the Admin partition, in any ASCII case, holds nothing in it.
//
// Negative control, run: without the check in FoldSource.Decide every
// "admin"/"ADMIN" probe below was Allowed.
func TestAUserNamedAfterTheAdminPartitionHoldsNothingInIt(t *testing.T) {
	s := newSecurityStore(t)
	ctx := context.Background()
	putNode(t, s, "Admin/_Access/ops", AssignmentNodeType, assignment("ops", roleGrant{Role: access.RoleAdmin}))
	fs := &FoldSource{Reader: s}

	for _, user := range []string{"admin", "ADMIN", "Admin"} {
		for _, path := range []string{GlobalAdminScope, TierPath("enterprise"), "admin/_Notification/n1", "/Admin//Tiers"} {
			assert.Equal(t, access.Denied, fs.Decide(ctx, user, path, access.Update), "Decide(%q, %q)", user, path)
		}
	}
	assert.Equal(t, access.Allowed, fs.Decide(ctx, "ops", TierPath("enterprise"), access.Update), "control: a global admin may")
	assert.Equal(t, access.Allowed, fs.Decide(ctx, "kate", "kate/doc", access.Update), "control: a user owns their own partition")

	f, err := fs.Fold(ctx)
	require.NoError(t, err)
	assert.Equal(t, access.Allowed, f.Decide("admin", TierPath("enterprise"), access.Update),
		"the fold's own rule alone: what the check must stop")
}
