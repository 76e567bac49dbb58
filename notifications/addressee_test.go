package notifications_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/notifications"
)

func TestTheAddresseeIsTheFirstSegmentOfTheRecipientAndAdminWhenThereIsNone(t *testing.T) {
	cases := []struct {
		recipient string
		want      string
		named     bool
	}{
		{"alice", "alice", true},
		{"alice/Projects/q3", "alice", true},
		{"  bob/Inbox  ", "bob", true},
		{"", notifications.Admin, false},
		{"   ", notifications.Admin, false},
		{"_Access/g1", notifications.Admin, false},    // a global satellite is nobody's inbox
		{"_Unknown/x", notifications.Admin, false},    // unroutable
		{"/alice", notifications.Admin, false},        // no first segment
		{"al\x00ice/x", notifications.Admin, false},   // not a valid path
		{"../etc/passwd", notifications.Admin, false}, // not a valid segment
	}
	for _, c := range cases {
		got, named := notifications.ResolveAddressee(c.recipient)
		assert.Equal(t, c.want, got, "recipient %q", c.recipient)
		assert.Equal(t, c.named, named, "recipient %q", c.recipient)
	}
}

func TestEveryQueryOfTheServiceIsPinnedExceptTheDeclaredMigrationRead(t *testing.T) {
	router, err := mesh.NewRouter(mesh.RouterConfig{})
	require.NoError(t, err)
	route := func(s string) (mesh.Route, error) {
		q, err := mesh.Parse(s)
		require.NoError(t, err, s)
		return router.Route(q, []string{"alice", "admin", "bob", "acme"})
	}
	for _, a := range []string{"alice", notifications.Admin} {
		for _, q := range []string{notifications.BellQuery(a), notifications.RetentionQuery(a, 7)} {
			r, err := route(q)
			require.NoError(t, err, q)
			assert.Equal(t, mesh.Pinned, r.Kind, q)
			assert.Equal(t, []string{mesh.SchemaOf(a)}, r.Schemas, q)
		}
	}

	// Negative controls: the shapes the bell must never take fail the check
	// above. An alternation over the two namespaces reads two schemas; the
	// old unanchored bell is refused outright.
	r, err := route("namespace:alice/_Notification|Admin/_Notification nodeType:Notification")
	require.NoError(t, err)
	assert.NotEqual(t, mesh.Pinned, r.Kind)
	_, err = route("nodeType:Notification sort:content.createdAt-desc")
	var refused *mesh.UnanchoredQueryError
	assert.True(t, errors.As(err, &refused), "the old bell shape must be refused, got %v", err)

	// The migration's one mesh-wide read is allowed only because it declares
	// itself.
	r, err = route(notifications.LegacyQuery)
	require.NoError(t, err)
	assert.Equal(t, mesh.FanOut, r.Kind)
}

func TestTypesAreValidatedAndABlankTypeIsGeneral(t *testing.T) {
	for _, typ := range notifications.Types() {
		got, err := notifications.ParseType(string(typ))
		require.NoError(t, err)
		assert.Equal(t, typ, got)
	}
	got, err := notifications.ParseType("approvalrequired")
	require.NoError(t, err)
	assert.Equal(t, notifications.ApprovalRequired, got)
	got, err = notifications.ParseType("")
	require.NoError(t, err)
	assert.Equal(t, notifications.General, got)

	_, err = notifications.ParseType("Urgent")
	var invalid *notifications.InvalidError
	require.True(t, errors.As(err, &invalid), "got %v", err)
	assert.Equal(t, "type", invalid.Field)
}
