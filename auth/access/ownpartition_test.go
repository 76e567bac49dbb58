package access

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A user is Admin of their own partition: a first path segment, which is
// never a global satellite (a first segment starting with '_', such as the
// root assignment container _Access). A user whose id is spelled like a
// deeper scope or like a global satellite owns nothing there. Control: with
// the rule applied at any scope equal to the user id (the code before the
// fix), "acme/secret" was Admin of acme/secret and "_Access" of every root
// assignment; both asserts below failed.
func TestAUserNamedLikeADeeperScopeOrAGlobalSatelliteOwnsNothingThere(t *testing.T) {
	f := mustFold(t, Snapshot{Assignments: []Assignment{deny("acme", "acme/secret", RoleViewer)}})
	assert.Equal(t, Denied, f.Decide("acme/secret", "acme/secret/doc", Read), "a path is not a partition")
	assert.Equal(t, Denied, f.Decide("_Access", "_Access/grant-me", Create), "a global satellite is not a partition")
	assert.Equal(t, Allowed, f.Decide("acme", "acme/secret/doc", Update), "control: the owner of the partition is Admin")
}
