package notifications_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

// admins answers the global-admin question from a fixed table; users not in
// it are Denied.
func admins(decisions map[string]access.Decision) notifications.GlobalAdmins {
	return notifications.GlobalAdminsFunc(func(_ context.Context, user string) access.Decision {
		if d, ok := decisions[user]; ok {
			return d
		}
		return access.Denied
	})
}

func create(t *testing.T, svc *notifications.Service, title, target string, recipients ...string) string {
	t.Helper()
	nodes, err := svc.Create(ctx(t), notifications.Notification{Title: title, TargetPath: target}, recipients...)
	require.NoError(t, err)
	return nodes[0].ID
}

func TestTheBellShowsTheViewersNotificationsNewestFirstGroupedBySource(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		svc := fx.service()
		// Created one second apart, in this order.
		create(t, svc, "draft shared", "acme/Docs/report", "alice")
		fx.clk.Advance(time.Second)
		create(t, svc, "plugin updated", "Plugins/charts", "alice")
		fx.clk.Advance(time.Second)
		create(t, svc, "comment on draft", "acme/Docs/report/_Thread/t1", "alice")
		fx.clk.Advance(time.Second)
		create(t, svc, "for bob only", "acme/Docs/report", "bob")

		w := watch(t, svc.Bell("alice"))
		st := w.await(t, "alice's three notifications", func(s notifications.BellState) bool { return s.Len() == 3 })

		require.Len(t, st.Groups, 2)
		// The thread comment is about the report: its source is the report.
		assert.Equal(t, "acme/Docs/report", st.Groups[0].Source, "the group with the newest notification first")
		assert.Equal(t, []string{"comment on draft", "draft shared"}, titles(notifications.BellState{Groups: st.Groups[:1]}))
		assert.Equal(t, "Plugins/charts", st.Groups[1].Source)
		assert.Equal(t, 3, st.Unread)
		assert.NotContains(t, titles(st), "for bob only")
		for _, g := range st.Groups {
			for _, n := range g.Items {
				assert.Equal(t, "alice", n.Addressee)
			}
		}
	})
}

func TestTheBellFollowsCreatesReadsAndDeletesWithoutReopening(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		svc := fx.service()
		first := create(t, svc, "first", "acme/a", "alice")
		w := watch(t, svc.Bell("alice"))
		w.await(t, "the initial state", func(s notifications.BellState) bool { return s.Len() == 1 && s.Unread == 1 })

		fx.clk.Advance(time.Second)
		create(t, svc, "second", "acme/b", "alice")
		st := w.await(t, "the new notification", func(s notifications.BellState) bool { return s.Len() == 2 })
		assert.Equal(t, []string{"second", "first"}, titles(st))

		require.NoError(t, svc.MarkRead(ctx(t), "alice", first))
		st = w.await(t, "one read", func(s notifications.BellState) bool { return s.Unread == 1 })
		assert.Equal(t, 2, st.Len())

		require.NoError(t, fx.store.Delete(ctx(t), "alice/_Notification/"+first))
		st = w.await(t, "the deletion", func(s notifications.BellState) bool { return s.Len() == 1 })
		assert.Equal(t, []string{"second"}, titles(st))
	})
}

func TestOnlyAGlobalAdminSeesTheAdminNotifications(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		svc := fx.service()
		svc.Admins = admins(map[string]access.Decision{
			"root":  access.Allowed,
			"alice": access.Denied,
			"dave":  access.Undetermined,
		})
		create(t, svc, "platform alert", "", "") // blank recipient: Admin
		create(t, svc, "own", "", "root", "alice", "dave")

		// The admin sees both legs; this is the positive control for the two
		// below, which differ only in the decision.
		st := watch(t, svc.Bell("root")).await(t, "root's bell", func(s notifications.BellState) bool { return s.Len() == 2 })
		assert.ElementsMatch(t, []string{"platform alert", "own"}, titles(st))

		for _, viewer := range []string{"alice", "dave"} {
			w := watch(t, svc.Bell(viewer))
			st := w.await(t, viewer+"'s bell", func(s notifications.BellState) bool { return s.Len() >= 1 })
			assert.Equal(t, []string{"own"}, titles(st), "%s must not see the Admin notifications", viewer)
		}
	})
}

func TestAnAdminCheckThatNeverAnswersIsCutOffAtItsBudgetAndLeavesTheAdminLegOut(t *testing.T) {
	fx := newMem(t)
	asked := make(chan struct{})
	causes := make(chan error, 1)
	svc := fx.service()
	svc.Admins = notifications.GlobalAdminsFunc(func(ctx context.Context, _ string) access.Decision {
		close(asked)
		<-ctx.Done() // a fold that never answers
		causes <- context.Cause(ctx)
		return access.Undetermined
	})
	create(t, svc, "platform alert", "", "")
	create(t, svc, "own", "", "root")

	// Subscribe blocks in the admin check, so it runs beside the test, which
	// drives the clock.
	watchers := make(chan *watcher, 1)
	go func() { watchers <- watch(t, svc.Bell("root")) }()
	<-asked
	budget := mesh.DefaultBudgets().Permission
	fx.clk.Advance(budget - time.Nanosecond)
	select {
	case err := <-causes:
		require.FailNow(t, "the admin check was cut off before its budget", "cause: %v", err)
	default: // negative control: one nanosecond short, it is still waiting
	}
	fx.clk.Advance(time.Nanosecond)
	var cause error
	select {
	case cause = <-causes:
	case <-time.After(convergence):
		require.FailNow(t, "the admin check was not cut off at its budget")
	}
	var timeout *rx.TimeoutError
	require.True(t, errors.As(cause, &timeout), "cause: %v", cause)
	assert.Equal(t, "global admin check", timeout.Stage)
	assert.Equal(t, budget, timeout.After)

	w := <-watchers
	st := w.await(t, "root's bell without the Admin leg", func(s notifications.BellState) bool { return s.Len() >= 1 })
	assert.Equal(t, []string{"own"}, titles(st))
}

func TestEveryReadTheBellMakesIsPinnedToOnePartition(t *testing.T) {
	fx := newMem(t)
	rec := &recordingMesh{Store: fx.store}
	svc := &notifications.Service{Mesh: rec, Clock: fx.clk, Admins: admins(map[string]access.Decision{"root": access.Allowed})}
	create(t, svc, "hello", "acme/x", "root", "")
	id := create(t, svc, "again", "acme/x", "root")
	require.NoError(t, svc.MarkRead(ctx(t), "root", id))
	watch(t, svc.Bell("root")).await(t, "root's bell", func(s notifications.BellState) bool { return s.Len() == 3 })

	router, err := mesh.NewRouter(mesh.RouterConfig{})
	require.NoError(t, err)
	queries := rec.recorded()
	require.NotEmpty(t, queries)
	for _, q := range queries {
		parsed, err := mesh.Parse(q)
		require.NoError(t, err, q)
		route, err := router.Route(parsed, []string{"root", "admin", "acme"})
		require.NoError(t, err, q)
		assert.Equal(t, mesh.Pinned, route.Kind, "%s must read one partition", q)
		assert.Len(t, route.Schemas, 1, q)
	}
	// The bell itself opened exactly the viewer's leg and the Admin leg.
	assert.Contains(t, queries, notifications.BellQuery("root"))
	assert.Contains(t, queries, notifications.BellQuery(notifications.Admin))
}

// Negative control: with the legs opened beside the subscriber (the admin
// check runs there) and the first state not waiting until every leg is
// kept (allInitial without the opened check), the Admin leg was still
// being joined when Unsubscribe returned: 1 live query, in 3 of 50 runs
// with -race.
func TestUnsubscribingTheBellReleasesItsLiveReads(t *testing.T) {
	fx := newMem(t)
	store := fx.store.(*memstore.Store)
	svc := fx.service()
	svc.Admins = admins(map[string]access.Decision{"root": access.Allowed})
	w := watch(t, svc.Bell("root"))
	w.await(t, "the initial state", func(notifications.BellState) bool { return true })
	assert.Equal(t, 2, store.Stats().LiveQueries, "the viewer's leg and the Admin leg")
	w.sub.Unsubscribe()
	assert.Zero(t, store.Stats().LiveQueries)
}

func TestTheBellCompletesWhenTheStoreCloses(t *testing.T) {
	fx := newMem(t)
	w := watch(t, fx.service().Bell("alice"))
	w.await(t, "the initial state", func(notifications.BellState) bool { return true })
	require.NoError(t, fx.store.(*memstore.Store).Close())
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.True(t, w.done)
	assert.NoError(t, w.err)
}

func TestABellForAViewerThatIsNoPartitionFailsWithATypedError(t *testing.T) {
	fx := newMem(t)
	for _, viewer := range []string{"", "_Access", "a/b"} {
		_, err := rx.First(ctx(t), fx.service().Bell(viewer))
		var invalid *notifications.InvalidError
		assert.True(t, errors.As(err, &invalid), "viewer %q: %v", viewer, err)
	}
}

func TestAnObserverMayWriteFromInsideTheBell(t *testing.T) {
	fx := newMem(t)
	svc := fx.service()
	create(t, svc, "first", "", "alice")
	var mu sync.Mutex
	var seen []int
	second := make(chan struct{})
	var sub rx.Subscription
	sub = svc.Bell("alice").Subscribe(rx.NewObserver(func(s notifications.BellState) {
		mu.Lock()
		seen = append(seen, s.Len())
		mu.Unlock()
		switch s.Len() {
		case 1:
			// Re-entrant: a write from inside the delivery of a state. The
			// memory store queues the resulting frame and delivers it
			// after this call returns.
			_, err := svc.Create(context.Background(), notifications.Notification{Title: "second"}, "alice")
			assert.NoError(t, err)
		case 2:
			close(second)
		}
	}, func(err error) { t.Error(err) }, nil))
	defer sub.Unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-second:
	case <-ctx.Done():
		t.Fatal("the state after the write did not arrive within 10s")
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []int{1, 2}, seen, "the state after the write follows, in order")
	assert.True(t, slices.IsSorted(seen))
}

// A viewer named after the Admin partition, in any case, is no viewer: the
// Admin notifications are shown to global admins only, and a user who is
// called "admin" must not read them as its own, nor mark them read.
// Negative control (run): before checkViewer, "admin" and "ADMIN" were
// shown the platform alert by both stores with Admins nil, and MarkRead
// marked it read.
func TestAViewerNamedAdminInAnyCaseIsRefusedRatherThanShownTheAdminNotifications(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		svc := fx.service() // Admins nil: nobody sees the Admin notifications
		id := create(t, svc, "platform alert", "", "")
		for _, viewer := range []string{"Admin", "admin", "ADMIN", "aDmIn"} {
			_, err := rx.First(ctx(t), svc.Bell(viewer))
			var invalid *notifications.InvalidError
			require.True(t, errors.As(err, &invalid), "viewer %q: %v", viewer, err)
			assert.Equal(t, "viewer", invalid.Field)
			err = svc.MarkRead(ctx(t), viewer, id)
			require.True(t, errors.As(err, &invalid), "MarkRead by %q: %v", viewer, err)
		}
		// Control: a viewer whose name only begins like it has a bell.
		st, err := rx.First(ctx(t), svc.Bell("admin2"))
		require.NoError(t, err)
		assert.Zero(t, st.Len())
	})
}
