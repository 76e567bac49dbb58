package memstore

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// A write waits for the store's lock while a read holds it (a live query's
// Initial over a large result holds it for that read). Its context bounds
// that wait: it returns with the context's error, naming the lock, and
// writes nothing. Negative control: the sync.RWMutex the store held before
// keeps a writer waiting past any context, as long as the read lasts.
func TestAWriteWhoseContextEndsWhileAReadHoldsTheStoreReturnsAndWritesNothing(t *testing.T) {
	const bound = 30 * time.Second // a hang guard: the waits are on conditions
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
		// TryRLock fails exactly when a writer is queued (only the read
		// holds the mutex, so the writer cannot hold it): from then on it
		// waits for the read alone, and mu.Lock takes no context that could
		// end that wait. (A fixed 100 ms "given time to pass the read"
		// passed too when the writer had not even started.)
		deadline := time.Now().Add(bound)
		for mu.TryRLock() {
			mu.RUnlock()
			if time.Now().After(deadline) {
				t.Fatal("the writer did not queue for the mutex")
			}
			runtime.Gosched()
		}
		mu.RUnlock()
		select {
		case <-locked:
		case <-time.After(bound):
			t.Fatal("the writer did not go on once the read ended")
		}
	})
}

// doneWatched is a context that says each time its Done channel is asked
// for: a writer asks when it waits for the store's lock.
type doneWatched struct {
	context.Context
	asked chan struct{}
}

// waitForAQueuedWriter returns once a writer waits in the store's lock's
// queue. A writer asks for its context's Done channel just before it joins
// the queue, so that alone raced a reader that came next: the reader could
// take the lock beside the long read before the writer queued (a CI run
// failed so, its SecurityVersion answering instead of waiting). The
// semaphore refuses a TryRLock exactly when someone waits, while only a read
// holds it.
func waitForAQueuedWriter(t *testing.T, s *Store, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for s.mu.TryRLock() {
		s.mu.RUnlock()
		if time.Now().After(deadline) {
			t.Fatal("the writer did not join the store's lock's queue")
		}
		runtime.Gosched()
	}
}

// behindALongRead holds the store's lock for a long read and queues a
// writer of an Item at path behind it, so that a reader arriving now waits
// for both. release ends the read (at most once: call it early and defer
// it); writer gets the write's error once it went on.
func behindALongRead(t *testing.T, s *Store, path string, bound time.Duration) (release func(), writer <-chan error) {
	t.Helper()
	s.mu.RLock()
	held := true
	release = func() {
		if held {
			held = false
			s.mu.RUnlock()
		}
	}
	queued := false
	defer func() {
		if !queued { // a t.Fatal below: free the lock for the writer
			release()
		}
	}()
	written := make(chan error, 1)
	ctx := &doneWatched{Context: context.Background(), asked: make(chan struct{}, 1)}
	go func() {
		_, err := s.Put(ctx, mesh.Node{Path: path, NodeType: "Item"})
		written <- err
	}()
	select {
	case <-ctx.asked:
	case <-time.After(bound):
		t.Fatal("the writer did not reach the store's lock")
	}
	waitForAQueuedWriter(t, s, bound)
	queued = true
	return release, written
}

func (c *doneWatched) Done() <-chan struct{} {
	select {
	case c.asked <- struct{}{}:
	default:
	}
	return c.Context.Done()
}

// The security reads take a context (auth reads the version on every
// decision, within its request's budget): waiting for the store's lock
// behind a long read, and a writer queued after it, they return when their
// context ends, naming the lock. Control: before, SecurityVersion and
// SecurityNodes took the lock without their context and waited as long as
// the read lasted (the test failed with "SecurityVersion waits for the
// store's lock without its context").
func TestSecurityReadsWaitingBehindALongReadReturnWhenTheirContextEnds(t *testing.T) {
	const bound = 30 * time.Second // a hang guard: the waits are on conditions
	s, err := New(Options{})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Put(context.Background(), mesh.Node{Path: "acme/_Access/r1", NodeType: mesh.RoleType})
	require.NoError(t, err) // the materialisation is not built for this version yet

	release, writer := behindALongRead(t, s, "acme/item", bound) // readers now wait
	defer release()

	for _, r := range []struct {
		name string
		read func(context.Context) error
	}{
		{"SecurityVersion", func(ctx context.Context) error { _, err := s.SecurityVersion(ctx); return err }},
		{"SecurityNodes", func(ctx context.Context) error { _, err := s.SecurityNodes(ctx); return err }},
	} {
		parent, cancel := context.WithCancel(context.Background())
		ctx := &doneWatched{Context: parent, asked: make(chan struct{}, 1)}
		done := make(chan error, 1)
		go func() { done <- r.read(ctx) }()
		select {
		case <-ctx.asked:
		case <-time.After(bound):
			release() // it waits without its context: only the read's end frees it
			<-done
			cancel()
			t.Fatalf("%s waits for the store's lock without its context", r.name)
		}
		cancel()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled, r.name)
			assert.ErrorContains(t, err, "waiting for the store's lock", r.name)
		case <-time.After(bound):
			release()
			<-done
			t.Fatalf("%s did not return when its context ended", r.name)
		}
	}
	release()
	require.NoError(t, <-writer, "the writer goes on once the read ends")
	snap, err := s.SecurityNodes(context.Background())
	require.NoError(t, err, "control: with the lock free, the read answers")
	assert.Len(t, snap.Nodes, 1)
}

// A live query's Initial waits for the store's lock within
// Budgets.QueryInitial on the store's clock: queued behind a long read and a
// writer waiting after it, it fails once the budget passes, with an error
// naming the lock (a *mesh.ProviderStalledError inside a
// *mesh.UnavailableError), instead of waiting as long as the work ahead.
// Control: on main (8872fbd) the query took the lock with RLock, put no
// timer on the clock, and the test failed with "the query's Initial does
// not wait on the store's clock" (it returned only once the read ended).
func TestAQueryWaitingBehindALongReadFailsWhenItsInitialBudgetEnds(t *testing.T) {
	const bound = 30 * time.Second // a hang guard: the waits are on conditions
	clk := rxtest.NewClock()
	budgets := mesh.DefaultBudgets()
	s, err := New(Options{Clock: clk, Budgets: budgets})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Put(context.Background(), mesh.Node{Path: "acme/item", NodeType: "Item"})
	require.NoError(t, err)

	release, writer := behindALongRead(t, s, "acme/other", bound) // readers now wait
	defer release()

	pending := clk.Pending()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		_, err := rx.First(ctx, s.Query("path:acme scope:subtree"))
		done <- err
	}()
	if err := clk.BlockUntil(pending+1, bound); err != nil {
		release()
		<-done
		t.Fatalf("the query's Initial does not wait on the store's clock: %v", err)
	}
	clk.Advance(budgets.QueryInitial - time.Nanosecond)
	select {
	case err := <-done:
		t.Fatalf("the query ended before its budget passed: %v", err)
	default:
	}
	clk.Advance(time.Nanosecond)
	select {
	case err := <-done:
		var stalled *mesh.ProviderStalledError
		require.ErrorAs(t, err, &stalled)
		assert.Equal(t, budgets.QueryInitial, stalled.Budget)
		assert.ErrorContains(t, err, "waiting for the store's lock")
		assert.True(t, mesh.IsUnavailable(err))
	case <-time.After(bound):
		release()
		<-done
		t.Fatal("the query did not end when its Initial budget passed")
	}
	release()
	require.NoError(t, <-writer, "the writer goes on once the read ends")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	c, err := rx.First(ctx, s.Query("path:acme scope:subtree"))
	require.NoError(t, err, "control: with the lock free, the query answers")
	assert.Len(t, c.Items, 2)
}

// A Get waits for the store's lock within Budgets.QueryInitial on the
// store's clock, as a query's Initial does: queued behind a long read and a
// writer waiting after it, it fails once the budget passes with an
// unavailable error naming the lock, never "absent". Control: on main
// (8872fbd) Get took the lock with RLock, put no timer on the clock, and the
// test failed with "Get does not wait on the store's clock".
func TestAGetWaitingBehindALongReadFailsWhenItsBudgetEnds(t *testing.T) {
	const bound = 30 * time.Second // a hang guard: the waits are on conditions
	clk := rxtest.NewClock()
	budgets := mesh.DefaultBudgets()
	s, err := New(Options{Clock: clk, Budgets: budgets})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Put(context.Background(), mesh.Node{Path: "acme/item", NodeType: "Item"})
	require.NoError(t, err)

	release, writer := behindALongRead(t, s, "acme/other", bound) // readers now wait
	defer release()

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		_, err := rx.Collect(ctx, s.Get("acme/item"))
		done <- err
	}()
	if err := clk.BlockUntil(1, bound); err != nil {
		release()
		<-done
		t.Fatalf("Get does not wait on the store's clock: %v", err)
	}
	clk.Advance(budgets.QueryInitial)
	select {
	case err := <-done:
		require.Error(t, err)
		assert.True(t, mesh.IsUnavailable(err), "cannot say, not absent: %v", err)
		assert.ErrorContains(t, err, "waiting for the store's lock")
	case <-time.After(bound):
		release()
		<-done
		t.Fatal("Get did not end when its budget passed")
	}
	release()
	require.NoError(t, <-writer)
	got, err := rx.Collect(context.Background(), s.Get("acme/item"))
	require.NoError(t, err, "control: with the lock free, Get answers")
	assert.Len(t, got, 1)
}

// A Get's wait for the store's lock ends with its subscription, as a
// query's Initial does (and pgstore's Get): rx.First's context ending while
// the Get waits behind a long read returns at once, long before the budget
// on the store's clock (which this test never advances). Control run:
// with Get's lock wait bounded by the budget alone (context.Background(),
// before the fix) First returned only once the read ended: "Get did not
// return when its subscription's context ended".
func TestAGetWaitingBehindALongReadReturnsWhenItsSubscriptionEnds(t *testing.T) {
	const bound = 30 * time.Second // a hang guard: the waits are on conditions
	clk := rxtest.NewClock()
	s, err := New(Options{Clock: clk})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Put(context.Background(), mesh.Node{Path: "acme/item", NodeType: "Item"})
	require.NoError(t, err)

	release, writer := behindALongRead(t, s, "acme/other", bound) // readers now wait
	defer release()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := rx.First(ctx, s.Get("acme/item"))
		done <- err
	}()
	require.NoError(t, clk.BlockUntil(1, bound), "the Get waits for the lock on the store's clock")
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(bound):
		release()
		<-done
		t.Fatal("Get did not return when its subscription's context ended")
	}
	release()
	require.NoError(t, <-writer)
	got, err := rx.Collect(context.Background(), s.Get("acme/item"))
	require.NoError(t, err, "control: with the lock free, Get answers")
	assert.Len(t, got, 1)
}
