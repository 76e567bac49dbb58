package notifications_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/notifications"
)

func TestANotificationIsDeliveredToEachAddresseesPartition(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		svc := fx.service()
		nodes, err := svc.Create(ctx(t), notifications.Notification{
			Title:      "Report ready",
			TargetPath: "acme/Docs/report",
			Type:       notifications.ApprovalRequired,
			CreatedBy:  "carol",
		}, "alice/Inbox", "bob", "alice/Elsewhere")
		require.NoError(t, err)
		require.Len(t, nodes, 2, "alice is named twice but is one addressee")
		id := nodes[0].ID
		assert.Equal(t, id, nodes[1].ID, "one notification, one id")

		for _, want := range []struct{ addressee, recipient string }{{"alice", "alice/Inbox"}, {"bob", "bob"}} {
			n, ok := get(t, fx.store, want.addressee+"/_Notification/"+id)
			require.True(t, ok, "delivered to %s", want.addressee)
			assert.Equal(t, want.addressee, n.MainNode)
			assert.Equal(t, notifications.NodeType, n.NodeType)
			c := contentOf(t, n)
			assert.Equal(t, "acme/Docs/report", c.TargetPath)
			assert.Equal(t, want.recipient, c.Recipient)
			assert.Equal(t, notifications.ApprovalRequired, c.Type)
			assert.False(t, c.IsRead)
			assert.True(t, c.CreatedAt.Equal(fx.clk.Now()), "createdAt is the clock's time")
		}
		// The old way stored it under the entity; nothing may be there now.
		assert.Empty(t, initial(t, fx.store, "namespace:acme/Docs/report/_Notification"))
	})
}

func TestTheStoredContentHasExactlyTheDocumentedFields(t *testing.T) {
	fx := newMem(t)
	nodes, err := fx.service().Create(ctx(t), notifications.Notification{Title: "t", Message: "m"}, "alice")
	require.NoError(t, err)
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(nodes[0].Content, &fields))
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	assert.Equal(t, []string{"createdAt", "createdBy", "icon", "id", "isRead", "message",
		"recipient", "targetPath", "title", "type"}, keys)
	var createdAt string
	require.NoError(t, json.Unmarshal(fields["createdAt"], &createdAt))
	_, err = time.Parse(time.RFC3339, createdAt)
	assert.NoError(t, err, "createdAt is RFC 3339: %s", createdAt)
}

func TestARecipientThatNamesNoPartitionIsDeliveredToAdmin(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		nodes, err := fx.service().Create(ctx(t), notifications.Notification{Title: "orphan"},
			"", "_Access/g1", "_Nowhere/x")
		require.NoError(t, err)
		require.Len(t, nodes, 1, "every unusable recipient resolves to the one Admin addressee")
		assert.Equal(t, "Admin/_Notification/"+nodes[0].ID, nodes[0].Path)

		// No recipients at all is the same: fail closed.
		nodes, err = fx.service().Create(ctx(t), notifications.Notification{Title: "nobody"})
		require.NoError(t, err)
		require.Len(t, nodes, 1)
		assert.Equal(t, "Admin", nodes[0].MainNode)
	})
}

func TestAPartitionTheStoreRefusesFallsBackToAdmin(t *testing.T) {
	// No store holds a partition named pg_catalog (PostgreSQL reserves the
	// schema, and every store keeps its partition rule): the notification
	// goes to Admin. Negative control: a partition the store holds is
	// delivered as addressed.
	eachStore(t, func(t *testing.T, fx fixture) {
		nodes, err := fx.service().Create(ctx(t), notifications.Notification{Title: "reserved"}, "pg_catalog")
		require.NoError(t, err)
		require.Len(t, nodes, 1)
		assert.Equal(t, "Admin", nodes[0].MainNode)

		nodes, err = fx.service().Create(ctx(t), notifications.Notification{Title: "held"}, "catalog")
		require.NoError(t, err)
		require.Len(t, nodes, 1)
		assert.Equal(t, "catalog", nodes[0].MainNode)
	})
}

func TestAnIdentityReplacesTheEarlierNotificationInsteadOfAddingOne(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		svc := fx.service()
		for i := range 3 {
			_, err := svc.Create(ctx(t), notifications.Notification{
				Title: "disk full, attempt " + strconv.Itoa(i), Identity: "disk-full:acme/db1",
			}, "alice")
			require.NoError(t, err)
			fx.clk.Advance(time.Second)
		}
		rows := initial(t, fx.store, notifications.BellQuery("alice"))
		require.Len(t, rows, 1)
		assert.Equal(t, "disk full, attempt 2", contentOf(t, rows[0]).Title, "the latest condition wins")

		// Negative control: without an identity each Create adds a row.
		for range 2 {
			_, err := svc.Create(ctx(t), notifications.Notification{Title: "disk full"}, "bob")
			require.NoError(t, err)
		}
		assert.Len(t, initial(t, fx.store, notifications.BellQuery("bob")), 2)
	})
}

func TestCreateRefusesABlankTitleOrUnknownTypeAndWritesNothing(t *testing.T) {
	fx := newMem(t)
	svc := fx.service()
	for _, n := range []notifications.Notification{
		{Title: "  "},
		{Title: "x", Type: "Urgent"},
	} {
		_, err := svc.Create(ctx(t), n, "alice")
		var invalid *notifications.InvalidError
		require.True(t, errors.As(err, &invalid), "got %v", err)
	}
	assert.Empty(t, initial(t, fx.store, notifications.BellQuery("alice")))
}

// TestCreateRefusesTextNoStoreHoldsAndWritesNothingAnywhere: a title,
// message, icon, target or creator that is not UTF-8 or holds a NUL is an
// *InvalidError naming the field, and nothing is written to the addressee
// or to Admin: the store's refusal of such a node was taken for the
// addressee's partition refusing it and the notification sent to Admin.
// Negative control, run by hand: without the check, Create answered a
// *DeliveryError for Admin.
func TestCreateRefusesTextNoStoreHoldsAndWritesNothingAnywhere(t *testing.T) {
	fx := newMem(t)
	svc := fx.service()
	for _, c := range []struct {
		field string
		n     notifications.Notification
	}{
		{"title", notifications.Notification{Title: "\xc0\x80"}},
		{"title", notifications.Notification{Title: "a\x00b"}},
		{"message", notifications.Notification{Title: "x", Message: "\xff"}},
		{"message", notifications.Notification{Title: "x", Message: "\x00"}},
		{"icon", notifications.Notification{Title: "x", Icon: "\x00"}},
		{"targetPath", notifications.Notification{Title: "x", TargetPath: "acme/\x00"}},
		{"createdBy", notifications.Notification{Title: "x", CreatedBy: "\x00"}},
	} {
		_, err := svc.Create(ctx(t), c.n, "alice")
		var invalid *notifications.InvalidError
		require.True(t, errors.As(err, &invalid), "%s: got %v", c.field, err)
		assert.Equal(t, c.field, invalid.Field)
	}
	assert.Empty(t, initial(t, fx.store, notifications.BellQuery("alice")))
	assert.Empty(t, initial(t, fx.store, notifications.BellQuery(notifications.Admin)))
}

func TestMarkReadChangesOnlyTheViewersOwnNotification(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		svc := fx.service()
		nodes, err := svc.Create(ctx(t), notifications.Notification{Title: "hello", Icon: "bell"}, "alice", "bob")
		require.NoError(t, err)
		id := nodes[0].ID

		require.NoError(t, svc.MarkRead(ctx(t), "alice", id))
		alice, _ := get(t, fx.store, "alice/_Notification/"+id)
		bob, _ := get(t, fx.store, "bob/_Notification/"+id)
		assert.True(t, contentOf(t, alice).IsRead)
		assert.Equal(t, "bell", contentOf(t, alice).Icon, "the other fields are kept")
		assert.False(t, contentOf(t, bob).IsRead, "bob's copy is bob's to mark")

		// Marking again writes nothing.
		require.NoError(t, svc.MarkRead(ctx(t), "alice", id))
		again, _ := get(t, fx.store, "alice/_Notification/"+id)
		assert.Equal(t, alice.Version, again.Version)

		// Carol has no such notification; an id that does not exist is the same.
		var notFound *notifications.NotFoundError
		require.True(t, errors.As(svc.MarkRead(ctx(t), "carol", id), &notFound))
		require.True(t, errors.As(svc.MarkRead(ctx(t), "alice", "no-such-id"), &notFound))
		assert.Equal(t, "alice", notFound.Viewer)

		var invalid *notifications.InvalidError
		require.True(t, errors.As(svc.MarkRead(ctx(t), "_Access", id), &invalid))
		require.True(t, errors.As(svc.MarkRead(ctx(t), "alice", "x/../y"), &invalid))
	})
}

func TestRetentionKeepsTheNewestNotificationsPerAddresseeAndNeverALegacyRow(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		const keep = 3
		svc := fx.service()
		svc.Retention = keep

		// A legacy row in alice's partition, older than everything: retention
		// must leave it for the migration.
		_, err := fx.store.Put(ctx(t), mesh.Node{Path: "alice/Doc/_Notification/old", NodeType: notifications.NodeType,
			Content: json.RawMessage(`{"title":"legacy"}`)})
		require.NoError(t, err)
		fx.clk.Advance(time.Second)

		for i := range 5 {
			_, err := svc.Create(ctx(t), notifications.Notification{Title: "n" + strconv.Itoa(i)}, "alice", "bob")
			require.NoError(t, err)
			fx.clk.Advance(time.Second)
		}
		var got []string
		for _, n := range initial(t, fx.store, "namespace:alice/_Notification nodeType:Notification sort:content.createdAt-asc") {
			got = append(got, contentOf(t, n).Title)
		}
		assert.Equal(t, []string{"n2", "n3", "n4"}, got, "the three newest stay")
		assert.Len(t, initial(t, fx.store, notifications.BellQuery("bob")), keep, "bob's cap is bob's")
		_, ok := get(t, fx.store, "alice/Doc/_Notification/old")
		assert.True(t, ok, "the legacy row is not retention's to remove")

		// Prune at the cap removes nothing more.
		removed, err := svc.Prune(ctx(t), "alice")
		require.NoError(t, err)
		assert.Zero(t, removed)

		// Negative control: with a larger cap the same writes keep all five.
		svc.Retention = 10
		for i := range 5 {
			_, err := svc.Create(ctx(t), notifications.Notification{Title: "c" + strconv.Itoa(i)}, "carol")
			require.NoError(t, err)
		}
		assert.Len(t, initial(t, fx.store, notifications.BellQuery("carol")), 5)

		var invalid *notifications.InvalidError
		_, err = svc.Prune(ctx(t), "")
		assert.True(t, errors.As(err, &invalid))
	})
}

// TestARecipientThatIsNotTextIsBadInputNotADeliveryFailure: a recipient
// that is not UTF-8 or holds a NUL is an *InvalidError naming the
// recipient, before anything is written: it is stored in the notification
// (Recipient), which no store holds, and the store's refusal was taken for
// the addressee's partition refusing it, sent on to Admin, refused again and
// reported as a *DeliveryError, the sign of a failing store. A blank
// recipient, or none, is no such input: it means Admin, as documented
// (TestARecipientThatNamesNoPartitionIsDeliveredToAdmin).
//
// The check comes before any store call, so the memory store shows it (a
// second database would cost this test its time budget).
//
// Negative control, run by hand (on memstore and pgstore alike): without
// the recipient check in Create, each recipient with a NUL answered a
// *DeliveryError for Admin, and those that are not UTF-8 were delivered
// with the recipient rewritten to U+FFFD.
func TestARecipientThatIsNotTextIsBadInputNotADeliveryFailure(t *testing.T) {
	fx := newMem(t)
	svc := fx.service()
	for _, recipients := range [][]string{
		{"alice\x00"},
		{"alice/x\x00y"},
		{"\x00"},
		{"alice/\xff"},
		{"\xc0\x80"},
		{"bob", "alice\x00"}, // a good recipient first: nothing is delivered to it either
	} {
		_, err := svc.Create(ctx(t), notifications.Notification{Title: "x"}, recipients...)
		var invalid *notifications.InvalidError
		if assert.ErrorAs(t, err, &invalid, "recipients %q", recipients) {
			assert.Equal(t, "recipient", invalid.Field, "recipients %q", recipients)
		}
		var delivery *notifications.DeliveryError
		assert.False(t, errors.As(err, &delivery), "recipients %q: no delivery failed: %v", recipients, err)
	}
	for _, addressee := range []string{"alice", "bob", notifications.Admin} {
		assert.Empty(t, initial(t, fx.store, notifications.BellQuery(addressee)), "nothing was delivered to %s", addressee)
	}
}
