package notifications_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/notifications"
)

// putLegacy writes a notification the old way, under the entity that
// notified.
func putLegacy(t *testing.T, s mesh.Store, path, title, recipient string) {
	t.Helper()
	content, err := json.Marshal(map[string]any{"title": title, "recipient": recipient, "type": "General"})
	require.NoError(t, err)
	_, err = s.Put(ctx(t), mesh.Node{Path: path, NodeType: notifications.NodeType, Name: title, Content: content})
	require.NoError(t, err)
}

// everyNotification returns title → paths of every notification in the mesh.
func everyNotification(t *testing.T, s mesh.Store) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, n := range initial(t, s, notifications.LegacyQuery) {
		title := contentOf(t, n).Title
		out[title] = append(out[title], n.Path)
	}
	return out
}

func TestLegacyNotificationsMoveToTheirAddresseesAndASecondRunDoesNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		putLegacy(t, fx.store, "acme/Docs/_Notification/n1", "for alice", "alice/Inbox")
		putLegacy(t, fx.store, "Plugins/charts/_Notification/n2", "for the plugin's partition", "")
		putLegacy(t, fx.store, "acme/Docs/_Notification/n3", "unusable recipient", "_Access/x")
		delivered := create(t, fx.service(), "already delivered", "acme/Docs", "bob")

		report, err := fx.service().MigrateLegacy(ctx(t))
		require.NoError(t, err)
		assert.Equal(t, notifications.Report{Scanned: 4, Moved: 3, Skipped: 1}, report)

		// Same ids, at the addressees; the entity kept as the target.
		n1, ok := get(t, fx.store, "alice/_Notification/n1")
		require.True(t, ok)
		assert.Equal(t, "alice", n1.MainNode)
		c := contentOf(t, n1)
		assert.Equal(t, "for alice", c.Title)
		assert.Equal(t, "acme/Docs", c.TargetPath)
		assert.Equal(t, "acme/Docs/_Notification/n1", c.MovedFrom)
		_, ok = get(t, fx.store, "Admin/_Notification/n2")
		assert.True(t, ok, "no recipient: Admin, as Create delivers it")
		_, ok = get(t, fx.store, "Admin/_Notification/n3")
		assert.True(t, ok, "an unusable recipient: Admin, as Create delivers it")
		_, ok = get(t, fx.store, "bob/_Notification/"+delivered)
		assert.True(t, ok, "a delivered row stays")
		for _, old := range []string{"acme/Docs/_Notification/n1", "Plugins/charts/_Notification/n2", "acme/Docs/_Notification/n3"} {
			_, ok := get(t, fx.store, old)
			assert.False(t, ok, "%s was moved", old)
		}

		again, err := fx.service().MigrateLegacy(ctx(t))
		require.NoError(t, err)
		assert.Equal(t, notifications.Report{Scanned: 4, Skipped: 4}, again)
	})
}

func TestAMigrationKilledMidwayLosesNothingAndDoublesNothing(t *testing.T) {
	const rows = 9
	// Kill points: right after the k-th copy is written and before its old
	// row is deleted (the dangerous moment), and right after the k-th delete.
	for _, kill := range []struct {
		name string
		at   func(rec *recordingMesh, k int, stop func())
	}{
		{"AfterACopyBeforeItsDelete", func(rec *recordingMesh, k int, stop func()) {
			rec.afterPut = func(n int) {
				if n == k {
					stop()
				}
			}
		}},
		{"AfterADelete", func(rec *recordingMesh, k int, stop func()) {
			rec.afterDelete = func(n int) {
				if n == k {
					stop()
				}
			}
		}},
	} {
		t.Run(kill.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, fx fixture) {
				want := map[string]string{} // title → addressee
				for i := range rows {
					title := fmt.Sprintf("legacy %d", i)
					recipient := []string{"alice", "bob/Inbox", ""}[i%3]
					putLegacy(t, fx.store, fmt.Sprintf("acme/Item%d/_Notification/id%d", i, i), title, recipient)
					want[title] = map[string]string{"alice": "alice", "bob/Inbox": "bob", "": notifications.Admin}[recipient]
				}

				rec := &recordingMesh{Store: fx.store}
				svc := &notifications.Service{Mesh: rec, Clock: fx.clk}
				killed, stop := context.WithCancel(ctx(t))
				kill.at(rec, 4, stop)
				report, err := svc.MigrateLegacy(killed)
				require.ErrorIs(t, err, context.Canceled, "the run was killed")
				assert.Less(t, report.Moved, rows, "it stopped part way")

				rec.afterPut, rec.afterDelete = nil, nil
				report, err = svc.MigrateLegacy(ctx(t))
				require.NoError(t, err)
				assert.Zero(t, report.Failed)

				got := everyNotification(t, fx.store)
				require.Len(t, got, rows, "nothing lost: %v", got)
				for title, at := range got {
					require.Len(t, at, 1, "%q is stored once, not doubled: %v", title, at)
					assert.True(t, strings.HasPrefix(at[0], want[title]+"/_Notification/"),
						"%q at its addressee %s: %s", title, want[title], at[0])
				}
				// Negative controls (tried): a migration that deletes the old
				// row before writing the new one fails at AfterADelete, the row
				// in flight is gone; one that does not recognise its own
				// earlier copy fails at AfterACopyBeforeItsDelete with a
				// conflict on the second run.
			})
		})
	}
}

func TestALegacyRowWhoseAddressedSlotHoldsAnotherNotificationStaysWhereItIs(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		// alice already has a notification with id n1 (delivered, not moved).
		_, err := fx.store.Put(ctx(t), mesh.Node{Path: "alice/_Notification/n1", NodeType: notifications.NodeType,
			Content: json.RawMessage(`{"id":"n1","title":"alice's own"}`)})
		require.NoError(t, err)
		putLegacy(t, fx.store, "acme/Docs/_Notification/n1", "legacy n1", "alice")
		putLegacy(t, fx.store, "acme/Docs/_Notification/n2", "legacy n2", "alice")

		report, err := fx.service().MigrateLegacy(ctx(t))
		assert.Equal(t, notifications.Report{Scanned: 3, Moved: 1, Skipped: 1, Failed: 1}, report)
		var move *notifications.MoveError
		require.True(t, errors.As(err, &move), "got %v", err)
		assert.Equal(t, "acme/Docs/_Notification/n1", move.From)
		var conflict *notifications.ConflictError
		require.True(t, errors.As(err, &conflict), "got %v", err)

		own, _ := get(t, fx.store, "alice/_Notification/n1")
		assert.Equal(t, "alice's own", contentOf(t, own).Title, "the slot's notification is untouched")
		_, ok := get(t, fx.store, "acme/Docs/_Notification/n1")
		assert.True(t, ok, "the conflicting legacy row is kept, not lost")
	})
}

// The seed's sample of the newest 200 legacy notifications: 124
// plugin-update notices under Plugins/{pkg}, 60 startup-import failures
// under a space, 12 thread completions under a thread's context partition
// (addressed to the user who ran it), 6 in a user's own partition (the
// seed's counts, 202 rows). Neither of the first two kinds names a
// recipient.
//
// Negative control (tried): with a blank recipient sent to the entity's
// partition, as before, the 124 notices land in Plugins/_Notification and
// the 60 failures in their spaces' containers: 184 of 202 where no bell
// reads them, and this test fails on each.
func TestEveryLegacyNotificationOfTheSeedsSampleLandsWhereABellReadsIt(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		users := []string{"rbuergi", "alice", "bob"}
		spaces := []string{"Store", "Doc", "acme"}
		for i := range 124 {
			putLegacy(t, fx.store, fmt.Sprintf("Plugins/pkg-%d/_Notification/update-%d", i%40, i), fmt.Sprintf("update %d", i), "")
		}
		for i := range 60 {
			putLegacy(t, fx.store, fmt.Sprintf("%s/Imports/startup-%d/_Notification/import-%d", spaces[i%len(spaces)], i%7, i), fmt.Sprintf("import failed %d", i), "")
		}
		for i := range 12 {
			putLegacy(t, fx.store, fmt.Sprintf("Doc/threads/t%d/_Notification/done-%d", i, i), fmt.Sprintf("thread done %d", i), users[i%len(users)])
		}
		for i := range 6 {
			u := users[i%len(users)]
			putLegacy(t, fx.store, fmt.Sprintf("%s/_Notification/own-%d", u, i), fmt.Sprintf("own %d", i), u)
		}

		report, err := fx.service().MigrateLegacy(ctx(t))
		require.NoError(t, err)
		assert.Equal(t, notifications.Report{Scanned: 202, Moved: 196, Skipped: 6}, report)

		read := map[string]string{} // path → the bell that reads it
		for _, bell := range append([]string{notifications.Admin}, users...) {
			for _, n := range initial(t, fx.store, notifications.BellQuery(bell)) {
				read[n.Path] = bell
			}
		}
		all := everyNotification(t, fx.store)
		require.Len(t, all, 202, "nothing lost, nothing doubled")
		unread := 0
		for title, at := range all {
			require.Len(t, at, 1, "%q is stored once", title)
			if _, ok := read[at[0]]; !ok {
				unread++
				t.Errorf("%q at %s: no bell reads it", title, at[0])
			}
		}
		assert.Zero(t, unread)
		admin := 0
		for _, bell := range read {
			if bell == notifications.Admin {
				admin++
			}
		}
		assert.Equal(t, 124+60, admin, "the notices and failures, with no recipient, are Admin's")

		again, err := fx.service().MigrateLegacy(ctx(t))
		require.NoError(t, err)
		assert.Equal(t, notifications.Report{Scanned: 202, Skipped: 202}, again, "a second run finds everything in place")
	})
}

// Paths are case-sensitive in the stores: acme/Docs and acme/docs are two
// entities, and a legacy row under each with the same id are two
// notifications wanting one addressed slot. Before, the run took the second
// for its own earlier copy (the copy's movedFrom was compared with
// strings.EqualFold) and deleted it: one notification lost. Control run:
// with EqualFold back, Moved is 2, Failed 0, and the second row is gone on
// both stores.
func TestALegacyRowUnderAnEntitySpelledInAnotherCaseIsNotTakenForAnEarlierCopy(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		putLegacy(t, fx.store, "acme/Docs/_Notification/n1", "about Docs", "alice")
		putLegacy(t, fx.store, "acme/docs/_Notification/n1", "about docs", "alice")
		require.Len(t, everyNotification(t, fx.store), 2, "two nodes: the store tells the paths apart")

		report, err := fx.service().MigrateLegacy(ctx(t))
		assert.Equal(t, notifications.Report{Scanned: 2, Moved: 1, Failed: 1}, report)
		var conflict *notifications.ConflictError
		assert.True(t, errors.As(err, &conflict), "got %v", err)

		got := everyNotification(t, fx.store)
		assert.Len(t, got, 2, "nothing lost: %v", got)
	})
}

// MigrateLegacy delivers "as Create would have": Create delivers to Admin
// what the addressee's partition refuses (PostgreSQL cannot hold a
// partition named pg_catalog). The migration counted such a row as failed
// on every run and left it where no bell reads it. Control run: without
// the fallback, the run fails with the *MoveError "partition pg_catalog
// cannot be stored".
func TestALegacyRowWhosePartitionTheStoreRefusesMovesToAdminAsCreateWouldDeliverIt(t *testing.T) {
	fx := newPG(t)
	putLegacy(t, fx.store, "acme/Docs/_Notification/n9", "for a reserved name", "pg_catalog")

	report, err := fx.service().MigrateLegacy(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, notifications.Report{Scanned: 1, Moved: 1}, report)
	moved, ok := get(t, fx.store, "Admin/_Notification/n9")
	require.True(t, ok, "at Admin, as Create delivers it")
	assert.Equal(t, "acme/Docs/_Notification/n9", contentOf(t, moved).MovedFrom)
	_, ok = get(t, fx.store, "acme/Docs/_Notification/n9")
	assert.False(t, ok, "the legacy row is gone")

	again, err := fx.service().MigrateLegacy(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, notifications.Report{Scanned: 1, Skipped: 1}, again)
}
