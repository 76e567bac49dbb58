package memstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// A write waits for the store's lock while a read holds it (a live query's
// Initial over a large result holds it for that read). Its context bounds
// that wait: it returns with the context's error, naming the lock, and
// writes nothing. Negative control: the sync.RWMutex the store held before
// keeps a writer waiting past any context, as long as the read lasts.
func TestAWriteWhoseContextEndsWhileAReadHoldsTheStoreReturnsAndWritesNothing(t *testing.T) {
	const bound = 5 * time.Second
	s, err := New(Options{})
	require.NoError(t, err)
	defer s.Close()

	s.mu.RLock() // the long read
	// The context ends once both writers wait for the lock: each asks for
	// its Done channel there. (A 50ms timeout raced the writers' start: on
	// a loaded machine it could end before they reached the lock, and the
	// error came from their first check instead.)
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &doneWatched{Context: parent, asked: make(chan struct{}, 2)}
	done := make(chan error, 2)
	go func() {
		_, err := s.Put(ctx, mesh.Node{Path: "acme/item", NodeType: "Item"})
		done <- err
	}()
	go func() { done <- s.Delete(ctx, "acme/other") }()
	for range 2 {
		select {
		case <-ctx.asked:
		case <-time.After(bound):
			t.Fatal("the writers did not reach the store's lock")
		}
	}
	cancel()
	for range 2 {
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorContains(t, err, "waiting for the store's lock")
		case <-time.After(bound):
			t.Fatal("a write did not return when its context ended")
		}
	}
	s.mu.RUnlock()
	got, err := rx.Collect(context.Background(), s.Get("acme/item"))
	require.NoError(t, err)
	assert.Empty(t, got, "nothing written")
	_, err = s.Put(context.Background(), mesh.Node{Path: "acme/item", NodeType: "Item"})
	require.NoError(t, err, "the lock is free again: a given-up writer left nothing held")

	t.Run("negative control: a sync.RWMutex writer waits as long as the read", func(t *testing.T) {
		var mu sync.RWMutex
		mu.RLock()
		locked := make(chan struct{})
		go func() {
			mu.Lock() // no context can end this wait
			close(locked)
			mu.Unlock()
		}()
		select {
		case <-locked:
			t.Fatal("the writer did not wait for the read")
		case <-time.After(100 * time.Millisecond): // the writer is given time to pass the read; it never does
		}
		mu.RUnlock()
		<-locked
	})
}

// doneWatched is a context that says each time its Done channel is asked
// for: a writer asks when it waits for the store's lock.
type doneWatched struct {
	context.Context
	asked chan struct{}
}

func (c *doneWatched) Done() <-chan struct{} {
	select {
	case c.asked <- struct{}{}:
	default:
	}
	return c.Context.Done()
}
