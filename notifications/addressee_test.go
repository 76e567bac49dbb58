package notifications_test

import (
	"errors"
	"strings"
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

// TestATypeNameThatOnlyUnicodeFoldingMakesATypeIsNoType: ParseType folds
// ASCII case only (mesh.EqualNames), so "Syſtem" (U+017F LONG S) and
// "Acce\u017F\u017FGranted" are refused like any unknown type.
// Control: another ASCII case of the same names parses.
// Negative control, run by hand: with strings.EqualFold in ParseType (the
// code before), "Syſtem" parsed as System.
func TestATypeNameThatOnlyUnicodeFoldingMakesATypeIsNoType(t *testing.T) {
	for _, s := range []string{"Sy\u017Ftem", "Acce\u017F\u017FGranted"} {
		require.True(t, strings.EqualFold(s, strings.ReplaceAll(s, "\u017F", "s")), "control: Unicode folding joins %q", s)
		got, err := notifications.ParseType(s)
		var invalid *notifications.InvalidError
		assert.True(t, errors.As(err, &invalid), "%q: got %q, %v", s, got, err)
	}
	got, err := notifications.ParseType("SYSTEM")
	require.NoError(t, err)
	assert.Equal(t, notifications.System, got, "control")
	got, err = notifications.ParseType("accessgranted")
	require.NoError(t, err)
	assert.Equal(t, notifications.AccessGranted, got, "control")
}
