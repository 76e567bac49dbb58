package pgstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx/rxtest"
)

// A fence number no fence was sent with is not believed: a forged one (a
// backend whose process id the sender cache mistook) would otherwise mark
// every query's rows trusted before its own fence came back. Control: the
// number of a fence that was sent is.
func TestAFenceNumberNoFenceWasSentWithIsNotBelieved(t *testing.T) {
	f := newFences()
	f.mu.Lock()
	sent := f.next
	f.next++ // what sendFences does as it sends fence number sent
	f.mu.Unlock()

	f.received("1000000")
	assert.Zero(t, f.seen.Load(), "a number above every fence sent")
	f.received("not a number")
	assert.Zero(t, f.seen.Load())

	f.received(fmtInt(sent))
	assert.Equal(t, sent, f.seen.Load(), "the fence that was sent")
}

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

// A query's wait for its fence to be sent is bounded on the store's clock:
// with no fence goroutine sending it, awaitSent returns false once the
// budget passes in virtual time, and not before. Control: on main
// (8872fbd) it waited on a real timer (time.NewTimer), put nothing on the
// clock, and the test failed with "awaitSent waits on nothing of the
// store's clock".
func TestAWaitForAFenceToBeSentEndsWithItsBudgetOnTheStoresClock(t *testing.T) {
	const budget = 25 * time.Second
	f := newFences()
	clk := rxtest.NewClock()
	n := f.request() // no sendFences goroutine: it is never sent
	done := make(chan bool, 1)
	go func() { done <- f.awaitSent(context.Background(), clk, n, budget) }()
	if err := clk.BlockUntil(1, testBudget); err != nil {
		t.Fatalf("awaitSent waits on nothing of the store's clock: %v", err)
	}
	clk.Advance(budget - time.Nanosecond)
	select {
	case <-done:
		t.Fatal("awaitSent returned before its budget passed")
	default:
	}
	clk.Advance(time.Nanosecond)
	select {
	case sent := <-done:
		assert.False(t, sent, "the fence was not sent")
	case <-time.After(testBudget):
		t.Fatal("awaitSent did not return when its budget passed")
	}

	// Control: a fence that is sent ends the wait at once, reporting it.
	n = f.request()
	f.mu.Lock()
	f.next++
	f.sent = n
	close(f.sentCh)
	f.sentCh = make(chan struct{})
	f.mu.Unlock()
	assert.True(t, f.awaitSent(context.Background(), clk, n, budget))
}
