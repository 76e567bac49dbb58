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
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 2)
	go func() {
		_, err := s.Put(ctx, mesh.Node{Path: "acme/item", NodeType: "Item"})
		done <- err
	}()
	go func() { done <- s.Delete(ctx, "acme/other") }()
	for range 2 {
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.DeadlineExceeded)
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
		case <-time.After(100 * time.Millisecond): // twice the context above
		}
		mu.RUnlock()
		<-locked
	})
}
