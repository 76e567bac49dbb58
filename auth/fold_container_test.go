package auth

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
)

// mesh routes a satellite segment whatever its case (mesh.TableFor):
// acme/_access/x is an assignment of acme, stored in acme's access table.
// The fold must read it as one, or a deny written so is silently dropped.
// Control: with assignmentScope matching "_Access" exactly (the code before
// the fix), the deny below is dropped and alice is Allowed at acme/doc; the
// root one is dropped too.
func TestADenyInAnAccessContainerSpelledInAnotherCaseStillDenies(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ container, scope string }{
		{"acme/_access", "acme"},
		{"acme/_ACCESS", "acme"},
		{"_access", ""},
	} {
		t.Run(c.container, func(t *testing.T) {
			s := newSecurityStore(t)
			putNode(t, s, "_Access/everyone", AssignmentNodeType, assignment("alice", roleGrant{Role: access.RoleViewer}))
			fs := &FoldSource{Reader: s}
			assert.Equal(t, access.Allowed, fs.Decide(ctx, "alice", "acme/doc", access.Read), "before the deny")

			path := c.container + "/deny-alice"
			assert.Equal(t, mesh.TableFor(c.scope+"/_Access/x"), mesh.TableFor(path), "mesh stores it as an assignment")
			putNode(t, s, path, AssignmentNodeType, assignment("alice", roleGrant{Role: access.RoleViewer, Denied: true}))
			assert.Equal(t, access.Denied, fs.Decide(ctx, "alice", "acme/doc", access.Read))
			assert.Equal(t, access.Denied, fs.Decide(ctx, "alice", "acme", access.Read))
		})
	}
}

// An assignment nested deeper in an _Access container (acme/_Access/team/x)
// is still a satellite of acme to mesh (mesh.OwnerOf), but not one the fold
// can place: it may be a deny for acme, so acme must be undetermined, not
// decided without it. Control: marking its own namespace unreadable (the
// code before the fix) left acme/doc Allowed.
func TestAnAssignmentTheFoldCannotPlaceMakesItsOwnerUndetermined(t *testing.T) {
	ctx := context.Background()
	s := newSecurityStore(t)
	putNode(t, s, "_Access/everyone", AssignmentNodeType, assignment("alice", roleGrant{Role: access.RoleViewer}))
	fs := &FoldSource{Reader: s}
	putNode(t, s, "acme/_Access/team/deny-alice", AssignmentNodeType, assignment("alice", roleGrant{Role: access.RoleViewer, Denied: true}))
	assert.Equal(t, "acme", mesh.OwnerOf("acme/_Access/team/deny-alice"))
	assert.Equal(t, access.Undetermined, fs.Decide(ctx, "alice", "acme/doc", access.Read))
	assert.Equal(t, access.Allowed, fs.Decide(ctx, "alice", "beta/doc", access.Read), "the rest is decided")
}
