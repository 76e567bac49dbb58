package auth

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func rankOf(t *testing.T, r PlanTierRanks, tier string) int {
	t.Helper()
	rank, ok := r.RankOf(tier)
	require.True(t, ok, "tier %q is on the ladder %v", tier, r.IDs())
	return rank
}

func TestTheLadderIsServedFromCacheFor59sAndRefilledByOneReadAt60s(t *testing.T) {
	f := newFixture(t)
	l := &PlanTierLadder{Mesh: f.store, Clock: f.clk}
	assert.Equal(t, 2, rankOf(t, first(t, l.Read()), "pro"))
	require.EqualValues(t, 1, f.store.queries.Load(), "the first read fills")

	require.NoError(t, f.reg.SetPlanTier(context.Background(), PlanTier{ID: "pro", Rank: 1}))
	f.clk.Advance(59 * time.Second)
	assert.Equal(t, 2, rankOf(t, first(t, l.Read()), "pro"), "at 59s the cached ladder is served")
	assert.EqualValues(t, 1, f.store.queries.Load(), "without a read")

	f.clk.Advance(time.Second)
	assert.Equal(t, 1, rankOf(t, first(t, l.Read()), "pro"), "at 60s the ladder is read again")
	assert.EqualValues(t, 2, f.store.queries.Load(), "by one read")
	assert.Equal(t, 1, rankOf(t, first(t, l.Read()), "pro"))
	assert.EqualValues(t, 2, f.store.queries.Load(), "and cached again")
	assert.Zero(t, f.clk.Pending())
}

func TestAHundredConcurrentCallersShareOneFill(t *testing.T) {
	const callers = 100
	run := func(t *testing.T, shareOneLadder bool) (fills int64, got []PlanTierRanks) {
		f := newFixture(t)
		release := rx.NewSubject[struct{}]()
		f.store.holdTiers(release)
		shared := &PlanTierLadder{Mesh: f.store, Clock: f.clk}
		recs := make([]*rxtest.Recorder[PlanTierRanks], callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := shared
				if !shareOneLadder {
					l = &PlanTierLadder{Mesh: f.store, Clock: f.clk}
				}
				recs[i] = rxtest.Record(f.clk, l.Read())
			}()
		}
		wg.Wait() // every caller has subscribed while the fill is held
		release.OnNext(struct{}{})
		for _, rec := range recs {
			require.True(t, rec.Completed())
			got = append(got, rec.Values()...)
		}
		return f.store.queries.Load(), got
	}

	fills, got := run(t, true)
	assert.EqualValues(t, 1, fills, "one fill for all callers")
	require.Len(t, got, callers)
	for _, r := range got {
		assert.Equal(t, 2, rankOf(t, r, "pro"))
	}

	// Negative control: the same callers without a shared ladder (so without
	// its slot) start a fill each.
	fills, _ = run(t, false)
	assert.EqualValues(t, callers, fills)
}

func TestAFailedFillServesTheLastSnapshotAndWarns(t *testing.T) {
	f := newFixture(t)
	logs, logger := testkit.CaptureLogs()
	l := &PlanTierLadder{Mesh: f.store, Clock: f.clk, Logger: logger}
	require.Equal(t, 2, rankOf(t, first(t, l.Read()), "pro"))

	f.clk.Advance(time.Minute)
	f.store.stall(StagePlanTiers)
	rec := rxtest.Record(f.clk, l.Read())
	f.clk.Advance(DefaultLadderReadTimeout - time.Nanosecond)
	assert.False(t, rec.Terminated(), "the fill is waited for, up to its bound")
	f.clk.Advance(time.Nanosecond)
	require.True(t, rec.Completed())
	assert.Equal(t, 2, rankOf(t, rec.Values()[0], "pro"), "the last snapshot")
	assert.EqualValues(t, 2, f.store.queries.Load(), "the expired cache was not served without trying a read")
	assert.Equal(t, []string{"auth: could not read the plan-tier ladder; serving the last snapshot"}, logs.Messages(slog.LevelWarn))

	// A fault is not cached: once the listing answers, the next read fills.
	f.store.heal(StagePlanTiers)
	require.NoError(t, f.reg.SetPlanTier(context.Background(), PlanTier{ID: "pro", Rank: 1}))
	assert.Equal(t, 1, rankOf(t, first(t, l.Read()), "pro"))
}

func TestAFailedFillWithNoSnapshotIsTheEmptyLadder(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault func(*faultStore)
	}{
		{"stalled", func(s *faultStore) { s.stall(StagePlanTiers) }},
		{"failing", func(s *faultStore) {
			s.fail(StagePlanTiers, &mesh.UnavailableError{Op: "query", Err: errors.New("down")})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			logs, logger := testkit.CaptureLogs()
			l := &PlanTierLadder{Mesh: f.store, Clock: f.clk, Logger: logger}
			c.fault(f.store)
			rec := rxtest.Record(f.clk, l.Read())
			f.clk.Advance(DefaultLadderReadTimeout)
			require.True(t, rec.Completed())
			ranks := rec.Values()[0]
			assert.Empty(t, ranks.IDs(), "no ladder")
			assert.False(t, ranks.Covers("pro", ""), "an unknown plan licenses nothing")
			assert.Len(t, logs.Messages(slog.LevelWarn), 1)

			// Negative control: the same ladder once the listing answers.
			f.store.heal(StagePlanTiers)
			assert.Equal(t, 2, rankOf(t, first(t, l.Read()), "pro"))
		})
	}
}

func TestATierThatCannotBeReadIsLeftOffTheLadder(t *testing.T) {
	f := newFixture(t)
	_, err := f.store.Put(context.Background(), mesh.Node{Path: TierPath("gold"), NodeType: TierNodeType, Content: []byte(`{"rank":"high"}`)})
	require.NoError(t, err)
	logs, logger := testkit.CaptureLogs()
	ranks := first(t, (&PlanTierLadder{Mesh: f.store, Clock: f.clk, Logger: logger}).Read())
	assert.Equal(t, []string{"free", "pro", "enterprise"}, ranks.IDs(), "gold is unknown, so it licenses nothing")
	assert.Len(t, logs.Messages(slog.LevelWarn), 1)
}

func TestTheLadderCacheHoldsOnAPlainMockClockToo(t *testing.T) {
	mock := clock.NewMock()
	f := newFixture(t)
	l := &PlanTierLadder{Mesh: f.store, Clock: mock}
	first(t, l.Read())
	mock.Add(59 * time.Second)
	first(t, l.Read())
	assert.EqualValues(t, 1, f.store.queries.Load(), "cached at 59s")
	mock.Add(time.Second)
	first(t, l.Read())
	assert.EqualValues(t, 2, f.store.queries.Load(), "refilled at 60s")

	// And a stalled fill is bounded by the mock's timer.
	mock.Add(time.Minute)
	f.store.stall(StagePlanTiers)
	rec := rxtest.NewRecorder[PlanTierRanks](nil)
	sub := l.Read().Subscribe(rec)
	defer sub.Unsubscribe()
	f.store.waitEntered(t, StagePlanTiers)
	mock.Add(DefaultLadderReadTimeout)
	require.True(t, rec.WaitTerminated(bound))
	assert.Equal(t, 2, rankOf(t, rec.Values()[0], "pro"), "the last snapshot")
}
