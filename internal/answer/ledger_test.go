package answer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestALedgerNamesWhatIsStillRunningAndHowLongEachFinishedStageTook(t *testing.T) {
	clk := rxtest.NewClock()
	l := NewLedger(clk)
	assert.Equal(t, "no stage had started", l.Describe())
	assert.Equal(t, []string{}, l.Pending(), "an empty ledger is waiting on nothing, and says so with an empty list")

	key := l.Enter("instance key")
	clk.Advance(300 * time.Millisecond)
	artifacts := l.Enter("pushed artifacts record")
	key.Finish()
	clk.Advance(time.Second)
	key.Finish() // a second Finish must not move the first one's time

	assert.Equal(t, []string{"pushed artifacts record"}, l.Pending())
	assert.Equal(t, 1300*time.Millisecond, l.Elapsed())
	assert.Equal(t, "still waiting on: pushed artifacts record (running 1s). finished: instance key 300ms", l.Describe())

	artifacts.Finish()
	assert.Empty(t, l.Pending())
	assert.Equal(t, "no stage still running. finished: instance key 300ms, pushed artifacts record 1s", l.Describe())
}

func TestANilLedgerRecordsNothingAndNeedsNoChecks(t *testing.T) {
	var l *Ledger
	l.Enter("anything").Finish()
	assert.Equal(t, []string{}, l.Pending())
	assert.Equal(t, time.Duration(0), l.Elapsed())
	assert.Nil(t, LedgerFrom(context.Background()))

	src := rx.Of(1, 2)
	got, err := rx.Collect(context.Background(), InStage(src, l, "stage"))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, got)
}

func TestAStageFinishesAtItsAnswerOrEndButNotWhenAbandoned(t *testing.T) {
	clk := rxtest.NewClock()
	l := NewLedger(clk)

	// Abandoned: unsubscribing must leave the stage running, because it is
	// still what the request waited on. Finishing on unsubscribe would make
	// Pending empty here.
	abandoned := rxtest.Record(clk, InStage(rx.Never[int](), l, "module activation list"))
	clk.Advance(2 * time.Second)
	abandoned.Unsubscribe()
	clk.Advance(time.Second)
	assert.Equal(t, []string{"module activation list"}, l.Pending())

	// Answered: the first value ends the wait, even if the source goes on.
	anchor := rxtest.Cold(clk, rxtest.Next(4*time.Second, 7), rxtest.Next(10*time.Second, 8))
	answered := rxtest.Record(clk, InStage[int](anchor, l, "origin anchor"))
	clk.Advance(4 * time.Second)
	assert.Equal(t, []string{"module activation list"}, l.Pending(), "the origin anchor answered at 4s")

	// Failed: an error ends it too.
	failed := rxtest.Record(clk, InStage(rx.Throw[int](rxtest.ErrTest), l, "held partitions"))
	require.ErrorIs(t, failed.Err(), rxtest.ErrTest)
	assert.Equal(t, []string{"module activation list"}, l.Pending())
	assert.Contains(t, l.Describe(), "origin anchor 4s")
	assert.Contains(t, l.Describe(), "held partitions 0s")
	answered.Unsubscribe()
}

func TestArrivalStartsOneLedgerAtTheOutermostMiddleware(t *testing.T) {
	clk := rxtest.NewClock()
	var seen *Ledger
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = LedgerFrom(r.Context()) })
	outer := NewLedger(clk)
	clk.Advance(time.Second)

	// A request that already carries a ledger keeps it: the budget counts
	// from the first arrival, not from a nested one.
	req := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(WithLedger(context.Background(), outer))
	Arrival(clk, Arrival(clk, inner)).ServeHTTP(httptest.NewRecorder(), req)
	assert.Same(t, outer, seen)

	Arrival(clk, inner).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	require.NotNil(t, seen)
	assert.NotSame(t, outer, seen)
	assert.Equal(t, clk.Now(), seen.Arrived())
}
