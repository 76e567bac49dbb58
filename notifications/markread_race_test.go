package notifications_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

// betweenReadAndWrite is a store whose first read of path runs meanwhile
// once the node has been read: another writer's change landing between a
// read and the write made from it.
type betweenReadAndWrite struct {
	mesh.Store
	path      string
	once      sync.Once
	meanwhile func()
}

func (s *betweenReadAndWrite) Get(path string) rx.Observable[mesh.Node] {
	if !mesh.EqualNames(path, s.path) {
		return s.Store.Get(path)
	}
	return rx.Create(func(ctx context.Context, o rx.Observer[mesh.Node]) {
		n, err := rx.First(ctx, s.Store.Get(path))
		s.once.Do(s.meanwhile)
		switch {
		case errors.Is(err, rx.ErrEmpty):
			o.OnCompleted()
		case err != nil:
			o.OnError(err)
		default:
			o.OnNext(n)
			o.OnCompleted()
		}
	})
}

// MarkRead writes back the node it read with isRead set. Before, it wrote
// unconditionally (Put): a notification replaced by its identity after the
// read got the old title back, and one deleted (retention, or its owner)
// came back to life. Control run: with MarkRead's write made a plain Put
// again, both subtests fail on both stores (the title is "first", the
// deleted notification is there again).
func TestMarkReadNeitherUndoesAReplacementNorRevivesADeletionThatLandedAfterItsRead(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		t.Run("replaced", func(t *testing.T) {
			plain := fx.service()
			nodes, err := plain.Create(ctx(t), notifications.Notification{Title: "first", Identity: "build-7"}, "alice")
			require.NoError(t, err)
			path := nodes[0].Path
			racing := &notifications.Service{Clock: fx.clk, Mesh: &betweenReadAndWrite{Store: fx.store, path: path, meanwhile: func() {
				_, err := plain.Create(ctx(t), notifications.Notification{Title: "second", Identity: "build-7"}, "alice")
				require.NoError(t, err)
			}}}

			require.NoError(t, racing.MarkRead(ctx(t), "alice", nodes[0].ID))
			n, ok := get(t, fx.store, path)
			require.True(t, ok)
			assert.Equal(t, "second", contentOf(t, n).Title, "the replacement that landed after MarkRead's read is kept")
		})
		t.Run("deleted", func(t *testing.T) {
			plain := fx.service()
			nodes, err := plain.Create(ctx(t), notifications.Notification{Title: "gone soon"}, "bob")
			require.NoError(t, err)
			path := nodes[0].Path
			racing := &notifications.Service{Clock: fx.clk, Mesh: &betweenReadAndWrite{Store: fx.store, path: path, meanwhile: func() {
				require.NoError(t, fx.store.Delete(ctx(t), path))
			}}}

			err = racing.MarkRead(ctx(t), "bob", nodes[0].ID)
			var notFound *notifications.NotFoundError
			assert.True(t, errors.As(err, &notFound), "got %v", err)
			_, ok := get(t, fx.store, path)
			assert.False(t, ok, "the notification deleted after MarkRead's read stays deleted")
		})
	})
}
