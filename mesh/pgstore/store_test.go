package pgstore

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx/rxtest"
)

// Close's wait for the store's goroutines is bounded on the store's clock:
// with one that does not end, Close returns once closeBudget has passed in
// virtual time (not before), with an error saying what it waited for.
// Control: with main's real 30s timer (8872fbd) only the listener's close
// of its connection was put on the clock, and the test failed with "Close
// waits on nothing of the store's clock".
func TestClosingWaitsForTheStoresGoroutinesWithinItsBudgetOnTheStoresClock(t *testing.T) {
	t.Parallel()
	clk := rxtest.NewClock()
	waits := &waitCounter{Clock: clk, d: closeBudget}
	s := openStore(t, pg.Database(t), Options{Clock: waits})
	stuck := make(chan struct{})
	release := sync.OnceFunc(func() { close(stuck) })
	defer release()
	require.True(t, s.start(func() { <-stuck }), "a goroutine of the store that does not end with its context")
	quiet(t, s, clk)
	armed := waits.n.Load()

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Close arms its wait for the goroutines. (Counting every timer
	// scheduled instead, as this test did before, also counted the
	// budgets of the store's other goroutines, such as the key
	// backfill's, which can make it advance before Close waits.)
	if !assert.Eventually(t, func() bool { return waits.n.Load() > armed },
		testBudget, time.Millisecond) {
		release()
		<-closed
		t.Fatal("Close waits on nothing of the store's clock")
	}
	clk.Advance(closeBudget - time.Nanosecond)
	select {
	case err := <-closed:
		t.Fatalf("Close returned before its budget passed: %v", err)
	default:
	}
	clk.Advance(time.Nanosecond)
	select {
	case err := <-closed:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the store's goroutines did not end within 30s")
	case <-time.After(testBudget):
		t.Fatal("Close did not return when its budget passed")
	}
}
