package rx_test

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The tests of this file are the contract of `go doc ./rx`, item by item, as
// issue 10 §1 lists them. Each names what must hold and shows, beside it, the
// same setup without the property (its negative control).

// callerLoop is a Create producer that loops on the subscribing goroutine,
// honouring its own ctx, and cancels the caller's context after 1,000 values
// (a deadline that passes while the source is still inside Subscribe).
func callerLoop(cancel context.CancelFunc, produced *atomic.Int64, limit int64) rx.Observable[int] {
	return rx.Create(func(ctx context.Context, o rx.Observer[int]) {
		for i := int64(0); i < limit && ctx.Err() == nil; i++ {
			produced.Add(1)
			o.OnNext(int(i))
			if i == 1000 {
				cancel()
			}
		}
		o.OnCompleted()
	})
}

func TestFirstAndCollectReturnCtxErrWhenCtxEndsWhileTheSourceRunsInsideSubscribe(t *testing.T) {
	const limit = 3_000_000
	t.Run("Collect", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var produced atomic.Int64
		vs, err := rx.Collect(ctx, callerLoop(cancel, &produced, limit))
		require.ErrorIs(t, err, context.Canceled)
		assert.Nil(t, vs)
		assert.Less(t, produced.Load(), int64(limit), "the source was unsubscribed and its producer stopped")
	})
	t.Run("First", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var produced atomic.Int64
		// Skip the first 1,500,000 values so First is still waiting when ctx ends.
		_, err := rx.First(ctx, rx.Filter(callerLoop(cancel, &produced, limit), func(v int) bool { return v > 1_500_000 }))
		require.ErrorIs(t, err, context.Canceled)
		assert.Less(t, produced.Load(), int64(limit))
	})
	t.Run("control: a context only consulted after Subscribe returns stops nothing", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var produced atomic.Int64
		sub := callerLoop(cancel, &produced, limit).Subscribe(rx.NewObserver[int](nil, nil, nil))
		<-ctx.Done()
		sub.Unsubscribe()
		assert.Equal(t, int64(limit), produced.Load(), "the producer ran to its own limit")
	})
}

// inFlightClock is a clock whose Schedule hands the callback to the test and
// whose stop always reports that the callback is already in flight — the
// moment a timer fires as the subscription ends, made deterministic.
type inFlightClock struct {
	*clock.Mock
	fs []func()
}

func (c *inFlightClock) Schedule(_ time.Duration, f func()) func() bool {
	c.fs = append(c.fs, f)
	return func() bool { return false }
}

func (c *inFlightClock) fireAll() {
	for _, f := range c.fs {
		f()
	}
}

func TestNoTimerNotificationIsDeliveredAfterUnsubscribeHasReturned(t *testing.T) {
	ops := map[string]func(clk clock.Clock) rx.Observable[int]{
		"Timeout": func(clk clock.Clock) rx.Observable[int] { return rx.Timeout(rx.Never[int](), time.Second, clk) },
		"Timer": func(clk clock.Clock) rx.Observable[int] {
			return rx.Map(rx.Timer(time.Second, clk), func(time.Time) int { return 1 })
		},
		"Delay": func(clk clock.Clock) rx.Observable[int] { return rx.Delay(rx.Of(1, 2), time.Second, clk) },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			clk := &inFlightClock{Mock: clock.NewMock()}
			rec := rxtest.Record(nil, op(clk))
			require.NotEmpty(t, clk.fs)
			clk.Add(2 * time.Second) // the timer is due
			rec.Unsubscribe()
			clk.fireAll() // the callback that stop could not prevent
			assert.Empty(t, rec.Events())
		})
		t.Run(name+"/control: the same callback before Unsubscribe delivers", func(t *testing.T) {
			clk := &inFlightClock{Mock: clock.NewMock()}
			rec := rxtest.Record(nil, op(clk))
			clk.Add(2 * time.Second)
			clk.fireAll()
			assert.NotEmpty(t, rec.Events())
		})
	}
	t.Run("Timeout on the real clock, firing as the subscription ends", func(t *testing.T) {
		for range 300 {
			var returned, after atomic.Bool
			note := func() {
				if returned.Load() {
					after.Store(true)
				}
			}
			sub := rx.Timeout(rx.Never[int](), 50*time.Microsecond, clock.New()).
				Subscribe(rx.NewObserver(func(int) { note() }, func(error) { note() }, nil))
			time.Sleep(50 * time.Microsecond) // aim the Unsubscribe at the firing; not a wait for an outcome
			sub.Unsubscribe()
			returned.Store(true)
			require.False(t, after.Load(), "OnError arrived after Unsubscribe returned")
		}
	})
}

func TestTakeSendsNothingAfterTheObserverUnsubscribedInsideTheNthOnNext(t *testing.T) {
	run := func(unsubscribe bool) *rxtest.Recorder[int] {
		var sub rx.Subscription
		rec := rxtest.NewRecorder[int](nil)
		src := rx.NewSubject[int]()
		sub = rx.Take[int](src, 2).Subscribe(rx.NewObserver(func(v int) {
			rec.OnNext(v)
			if v == 1 && unsubscribe {
				sub.Unsubscribe()
			}
		}, rec.OnError, rec.OnCompleted))
		for i := range 10 {
			src.OnNext(i)
		}
		return rec
	}
	rec := run(true)
	assert.Equal(t, []int{0, 1}, rec.Values())
	assert.False(t, rec.Terminated(), "no OnCompleted after the unsubscription")
	assert.True(t, run(false).Completed(), "control: without the unsubscription Take completes")
}

func TestReplayAndBehaviorSubjectsNeverRecordAValueThatArrivedAfterTheirEnd(t *testing.T) {
	t.Run("racing OnNext and OnCompleted", func(t *testing.T) {
		for i := range 300 {
			s := rx.NewReplaySubject[int](0)
			early := rxtest.Record[int](nil, s)
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); s.OnNext(i) }()
			go func() { defer wg.Done(); s.OnCompleted() }()
			wg.Wait()
			late := rxtest.Record[int](nil, s)
			assert.Equal(t, early.Values(), late.Values(), "a late subscriber is replayed what early ones saw, no more")
			require.NoError(t, early.GrammarErr())
		}
	})
	t.Run("Behavior Value does not change after the end", func(t *testing.T) {
		s := rx.NewBehaviorSubject(1)
		s.OnCompleted()
		s.OnNext(2)
		assert.Equal(t, 1, s.Value())
		assert.True(t, rxtest.Record[int](nil, s).Completed())
		assert.Empty(t, rxtest.Record[int](nil, s).Values())
	})
	t.Run("Behavior Value right after a re-entrant OnNext is the new value", func(t *testing.T) {
		s := rx.NewBehaviorSubject(0)
		var seen []int
		s.Subscribe(rx.NewObserver(func(v int) {
			if v == 1 {
				s.OnNext(2) // queued behind this delivery
				seen = append(seen, s.Value())
			}
		}, nil, nil))
		s.OnNext(1)
		assert.Equal(t, []int{2}, seen)
		assert.Equal(t, 2, s.Value())
	})
}

func TestFirstOnAReplayingSubjectFromInsideItsOwnNotificationReturnsTheCurrentValue(t *testing.T) {
	bounded := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 10*time.Second)
	}
	firstInside := func(s interface {
		rx.Observable[int]
		OnNext(int)
	}, of rx.Observable[int]) (int, error, time.Duration) {
		var got int
		var err error
		var took time.Duration
		rx.Take[int](s, 2).Subscribe(rx.NewObserver(func(v int) {
			if v != 7 {
				return
			}
			ctx, cancel := bounded()
			defer cancel()
			start := time.Now()
			got, err = rx.First(ctx, of)
			took = time.Since(start)
		}, nil, nil))
		s.OnNext(7)
		return got, err, took
	}
	b := rx.NewBehaviorSubject(0)
	v, err, took := firstInside(b, b)
	require.NoError(t, err)
	assert.Equal(t, 7, v)
	assert.Less(t, took, time.Second)

	r := rx.NewReplaySubject[int](1)
	v, err, _ = firstInside(r, r)
	require.NoError(t, err)
	assert.Equal(t, 7, v)

	b2 := rx.NewBehaviorSubject(0)
	v, err, _ = firstInside(b2, rx.Share[int](b2))
	require.NoError(t, err)
	assert.Equal(t, 7, v, "Share connects inside the subject's notification and gets its replay")

	t.Run("control: a Subject, which does not replay, makes First wait for its context", func(t *testing.T) {
		s := rx.NewSubject[int]()
		var err error
		s.Subscribe(rx.NewObserver(func(int) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			_, err = rx.First[int](ctx, s)
		}, nil, nil))
		s.OnNext(7)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestOnErrorNilIsAFailureNotASuccess(t *testing.T) {
	s := rx.NewReplaySubject[int](0)
	s.OnError(nil)
	_, err := rx.First[int](context.Background(), s)
	assert.ErrorIs(t, err, rx.ErrNilError)

	_, err = rx.Collect(context.Background(), rx.Create(func(_ context.Context, o rx.Observer[int]) { o.OnNext(1); o.OnError(nil) }))
	assert.ErrorIs(t, err, rx.ErrNilError)

	_, err = rx.Collect(context.Background(), rx.Create(func(_ context.Context, o rx.Observer[int]) { o.OnNext(1); o.OnCompleted() }))
	assert.NoError(t, err, "control: a completion is a success")
}

func TestRangeNearTheIntegerLimitEmitsAllValuesOrFails(t *testing.T) {
	vs, err := rx.Collect(context.Background(), rx.Range(math.MaxInt-2, 3))
	require.NoError(t, err)
	assert.Equal(t, []int{math.MaxInt - 2, math.MaxInt - 1, math.MaxInt}, vs)

	_, err = rx.Collect(context.Background(), rx.Range(math.MaxInt-1, 3))
	var re *rx.RangeError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 3, re.Count)

	vs, err = rx.Collect(context.Background(), rx.Range(-2, 3))
	require.NoError(t, err)
	assert.Equal(t, []int{-2, -1, 0}, vs, "control: an ordinary range")
}

func TestUnderTakeFinallyRunsAfterTheDownstreamCompletion(t *testing.T) {
	var order []string
	rx.Take(rx.Finally(rx.Range(0, 10), func() { order = append(order, "finally") }), 2).
		Subscribe(rx.NewObserver(func(int) { order = append(order, "next") }, nil, func() { order = append(order, "completed") }))
	assert.Equal(t, []string{"next", "next", "completed", "finally"}, order)

	order = nil
	rx.Finally(rx.Range(0, 2), func() { order = append(order, "finally") }).
		Subscribe(rx.NewObserver(func(int) { order = append(order, "next") }, nil, func() { order = append(order, "completed") }))
	assert.Equal(t, []string{"next", "next", "completed", "finally"}, order, "control: the same order without Take")
}
