package notifications_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

// putNotification writes a notification node at path directly, as a
// migration or another writer may.
func putNotification(t *testing.T, s mesh.Store, path, title string) {
	t.Helper()
	content, err := json.Marshal(map[string]any{"title": title, "type": "General"})
	require.NoError(t, err)
	_, err = s.Put(ctx(t), mesh.Node{Path: path, NodeType: notifications.NodeType, Name: title, Content: content})
	require.NoError(t, err)
}

// Paths are case-sensitive in the stores: .../Note1 and .../note1 are two
// notifications. The bell and the shared Admin read kept them by the
// lower-cased path, so they showed one of the two, and the removal of one
// took the other off the bell. Control run: with the lower-cased keys back,
// the first state holds one notification on both stores, for the viewer's
// own leg and for the Admin leg.
func TestTwoNotificationsWhosePathsDifferOnlyInCaseAreBothOnTheBell(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		putNotification(t, fx.store, "alice/_Notification/Note1", "upper")
		putNotification(t, fx.store, "alice/_Notification/note1", "lower")
		putNotification(t, fx.store, "Admin/_Notification/Alert1", "upper alert")
		putNotification(t, fx.store, "Admin/_Notification/alert1", "lower alert")
		require.Len(t, initial(t, fx.store, notifications.BellQuery("alice")), 2, "the store holds two")

		svc := fx.service()
		svc.Admins = admins(map[string]access.Decision{"root": access.Allowed})
		st, err := rx.First(ctx(t), svc.Bell("alice"))
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"upper", "lower"}, titles(st))
		st, err = rx.First(ctx(t), svc.Bell("root"))
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"upper alert", "lower alert"}, titles(st), "the Admin leg")

		w := watch(t, svc.Bell("alice"))
		w.await(t, "both", func(s notifications.BellState) bool { return s.Len() == 2 })
		require.NoError(t, fx.store.Delete(ctx(t), "alice/_Notification/note1"))
		st = w.await(t, "the removal of one", func(s notifications.BellState) bool { return s.Len() < 2 })
		assert.Equal(t, []string{"upper"}, titles(st), "the other stays")
	})
}

// A recipient spelled "Alice/Inbox" is delivered to the partition alice
// (partition names fold ASCII case) at Alice/_Notification/{id}, and
// alice's bell shows it; MarkRead("alice", id) read only
// alice/_Notification/{id}, another path, and said alice had no such
// notification. Control run: with MarkRead reading only that path, it
// fails with *NotFoundError on both stores.
func TestAViewerMarksReadANotificationDeliveredUnderAnotherASCIISpellingOfTheirPartition(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		svc := fx.service()
		nodes, err := svc.Create(ctx(t), notifications.Notification{Title: "hi"}, "Alice/Inbox")
		require.NoError(t, err)
		require.Equal(t, "Alice/_Notification/"+nodes[0].ID, nodes[0].Path)
		st, err := rx.First(ctx(t), svc.Bell("alice"))
		require.NoError(t, err)
		require.Equal(t, 1, st.Unread, "alice's bell shows it")

		require.NoError(t, svc.MarkRead(ctx(t), "alice", nodes[0].ID))
		n, ok := get(t, fx.store, nodes[0].Path)
		require.True(t, ok)
		assert.True(t, contentOf(t, n).IsRead)
		_, ok = get(t, fx.store, "alice/_Notification/"+nodes[0].ID)
		assert.False(t, ok, "no second node is written")

		var notFound *notifications.NotFoundError
		assert.ErrorAs(t, svc.MarkRead(ctx(t), "bob", nodes[0].ID), &notFound, "bob still has no such notification")
	})
}
