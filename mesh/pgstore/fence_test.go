package pgstore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/mesh"
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

// fenceGate is a QueryTracer (the seam Options gives every user) that holds
// every fence statement until released, as a pool with no connection to
// spare, or a server slow to answer, would.
type fenceGate struct {
	held, release chan struct{}
	heldOnce      sync.Once
	releaseOnce   sync.Once
}

func newFenceGate() *fenceGate {
	return &fenceGate{held: make(chan struct{}), release: make(chan struct{})}
}

func (g *fenceGate) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(d.SQL, "-- fence") {
		g.heldOnce.Do(func() { close(g.held) })
		select {
		case <-g.release:
		case <-ctx.Done():
		}
	}
	return ctx
}

func (g *fenceGate) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (g *fenceGate) open() { g.releaseOnce.Do(func() { close(g.release) }) }

// A live query's Initial comes within Budgets.QueryInitial of its read's
// start, however long its fence takes to be sent: the fence only spares
// later reads, so waiting for it must not hold the Initial past the budget
// a reader (and a fan-in's stall timer) gives it. Control run: with the
// fence waited for within Budgets.Operation (before the fix), the Initial
// had not come once QueryInitial had passed on the store's clock: the wait
// for it ran out.
func TestASlowFenceDoesNotHoldAnInitialPastItsBudget(t *testing.T) {
	t.Parallel()
	clk := rxtest.NewClock()
	gate := newFenceGate()
	s := openStore(t, pg.Database(t), Options{Clock: clk, QueryTracer: gate, FeedCheck: 2 * time.Hour})
	t.Cleanup(gate.open) // before the store closes: its fence goroutine is held
	put(t, s, mesh.Node{Path: "acme/Docs/a", NodeType: "Article"})

	live := watchQuery(t, s, "namespace:acme/Docs")
	awaitClosed(t, gate.held, "the Initial's fence to be held")
	clk.Advance(s.budgets.QueryInitial)
	live.await(t, "the Initial, once QueryInitial has passed", kindOn(mesh.Initial, "acme/Docs/a"))

	// The fence, sent at last, still serves: a write's row is applied.
	gate.open()
	put(t, s, mesh.Node{Path: "acme/Docs/b", NodeType: "Article"})
	live.await(t, "Added b", kindOn(mesh.Added, "acme/Docs/b"))
}
