package rxgoadapt_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxgoadapt"
	"github.com/meshrx/meshrx/rx/rxtest"
	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// sendTo sends it on ch, failing the test if nobody takes it within the wait budget.
func sendTo(t *testing.T, ch chan<- rxgo.Item, it rxgo.Item, what string) {
	t.Helper()
	timer := time.NewTimer(waitBudget)
	defer timer.Stop()
	select {
	case ch <- it:
	case <-timer.C:
		t.Fatalf("waited %v for %s", waitBudget, what)
	}
}

func TestAnEndedSubscriptionDrainsAnRxGoSourceForAtMostItsBudget(t *testing.T) {
	const budget = time.Second
	clk := rxtest.NewClock()
	logs := &testkit.SyncBuffer{}
	// rxgo.FromChannel hands over ch itself: nothing on the rxgo side watches
	// the subscription's context, and ch stays open.
	ch := make(chan rxgo.Item)
	src := rxgoadapt.FromRxGo(rxgo.FromChannel(ch),
		rxgoadapt.WithClock(clk), rxgoadapt.WithDrainBudget(budget),
		rxgoadapt.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	got := make(chan any, 4)
	sub := src.Subscribe(rx.NewObserver(func(v any) { got <- v }, nil, nil))
	sendTo(t, ch, rxgo.Of(1), "the subscription to read the first item")
	require.Equal(t, 1, receive(t, got, "the first value"))

	sub.Unsubscribe()
	require.Equal(t, 1, clk.Pending(), "the drain budget is armed when the subscription ends")

	clk.Advance(budget - time.Nanosecond)
	// Negative control for the bound below: until the budget is spent the
	// drain keeps reading, so a sender that ignores the context is not stuck.
	sendTo(t, ch, rxgo.Of(2), "the drain to read an item sent after Unsubscribe")
	assert.Empty(t, logs.String())

	clk.Advance(time.Nanosecond)
	assert.Contains(t, logs.String(), `waitingOn="rxgo item channel to close"`)
	assert.Contains(t, logs.String(), "budget=1s")
	goleak.VerifyNone(t)
	assert.Empty(t, got, "nothing is delivered after Unsubscribe")
}

func TestADrainEndsQuietlyWhenTheRxGoSourceClosesWithinItsBudget(t *testing.T) {
	const budget = time.Second
	clk := rxtest.NewClock()
	logs := &testkit.SyncBuffer{}
	ch := make(chan rxgo.Item)
	src := rxgoadapt.FromRxGo(rxgo.FromChannel(ch),
		rxgoadapt.WithClock(clk), rxgoadapt.WithDrainBudget(budget),
		rxgoadapt.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	sub := src.Subscribe(rx.NewObserver[any](nil, nil, nil))
	sub.Unsubscribe()
	require.Equal(t, 1, clk.Pending())

	close(ch)
	goleak.VerifyNone(t)
	assert.Equal(t, 0, clk.Pending(), "a finished drain disarms its budget")
	clk.Advance(2 * budget)
	assert.Empty(t, logs.String())
}

func TestTheDrainBudgetAlsoRunsOnAPlainClockMock(t *testing.T) {
	const budget = time.Second
	clk := clock.NewMock()
	logs := &testkit.SyncBuffer{}
	ch := make(chan rxgo.Item)
	src := rxgoadapt.FromRxGo(rxgo.FromChannel(ch),
		rxgoadapt.WithClock(clk), rxgoadapt.WithDrainBudget(budget),
		rxgoadapt.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	sub := src.Subscribe(rx.NewObserver[any](nil, nil, nil))
	sub.Unsubscribe()

	clk.Add(budget - time.Nanosecond)
	sendTo(t, ch, rxgo.Of(1), "the drain to read an item before its budget is spent")
	clk.Add(time.Nanosecond)
	// The mock runs the expiry on a goroutine of its own: wait for the
	// drain to give up, then read what it logged.
	goleak.VerifyNone(t)
	assert.Contains(t, logs.String(), `waitingOn="rxgo item channel to close"`)
}
