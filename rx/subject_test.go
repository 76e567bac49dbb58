package rx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestAsyncSubjectDeliversTheLastValueAndCompletionToEveryObserver(t *testing.T) {
	s := rx.NewAsyncSubject[int]()
	a, b := rxtest.Record[int](nil, s), rxtest.Record[int](nil, s)
	s.OnNext(1)
	s.OnNext(2)
	assert.Empty(t, a.Values(), "nothing before completion")
	s.OnCompleted()
	for _, r := range []*rxtest.Recorder[int]{a, b} {
		assert.Equal(t, []int{2}, r.Values())
		assert.True(t, r.Completed())
		require.NoError(t, r.GrammarErr())
	}
}

func TestAsyncSubjectReplaysToLateSubscribersSynchronously(t *testing.T) {
	s := rx.NewAsyncSubject[string]()
	s.OnNext("derived")
	s.OnCompleted()
	late := rxtest.Record[string](nil, s) // Record returns after Subscribe did
	assert.Equal(t, []string{"derived"}, late.Values())
	assert.True(t, late.Completed())

	failed := rx.NewAsyncSubject[string]()
	failed.OnNext("dropped")
	failed.OnError(rxtest.ErrTest)
	lateErr := rxtest.Record[string](nil, failed)
	assert.Empty(t, lateErr.Values())
	assert.ErrorIs(t, lateErr.Err(), rxtest.ErrTest)

	empty := rx.NewAsyncSubject[string]()
	empty.OnCompleted()
	_, err := rx.First[string](context.Background(), empty)
	assert.ErrorIs(t, err, rx.ErrEmpty)
}

func TestAnAsyncSubjectObserverMayCallBackIntoItFromOnCompleted(t *testing.T) {
	// samber/ro v0.3.0 delivers completion under the subject's lock, so the
	// re-entrant Subscribe below deadlocks there; delivering outside the lock
	// is what makes this test finish. The bound turns a deadlock into a
	// failure instead of a hung test run.
	s := rx.NewAsyncSubject[int]()
	var reentered []int
	s.Subscribe(rx.NewObserver[int](nil, nil, func() {
		s.OnNext(99) // ignored: the subject has ended
		s.Subscribe(rx.NewObserver(func(v int) { reentered = append(reentered, v) }, nil, nil))
	}))
	s.OnNext(7)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		s.OnCompleted()
	}()
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("OnCompleted deadlocked on a re-entrant observer")
	}
	assert.Equal(t, []int{7}, reentered)
}

func TestSubjectGivesLateSubscribersItsEnding(t *testing.T) {
	s := rx.NewSubject[int]()
	early := rxtest.Record[int](nil, s)
	s.OnNext(1)
	s.OnError(rxtest.ErrTest)
	late := rxtest.Record[int](nil, s)
	assert.Equal(t, []int{1}, early.Values())
	assert.Empty(t, late.Values())
	assert.ErrorIs(t, late.Err(), rxtest.ErrTest)
}

func TestAnUnsubscribedSubjectObserverReceivesNothingMore(t *testing.T) {
	s := rx.NewSubject[int]()
	r := rxtest.Record[int](nil, s)
	s.OnNext(1)
	r.Unsubscribe()
	s.OnNext(2)
	s.OnCompleted()
	assert.Equal(t, []int{1}, r.Values())
	assert.False(t, r.Terminated())
}

func TestBehaviorSubjectGivesTheLatestValueFirst(t *testing.T) {
	s := rx.NewBehaviorSubject(0)
	a := rxtest.Record[int](nil, s)
	s.OnNext(1)
	b := rxtest.Record[int](nil, s)
	s.OnNext(2)
	assert.Equal(t, []int{0, 1, 2}, a.Values())
	assert.Equal(t, []int{1, 2}, b.Values())
	assert.Equal(t, 2, s.Value())
	s.OnCompleted()
	c := rxtest.Record[int](nil, s)
	assert.Empty(t, c.Values(), "after completion only the completion")
	assert.True(t, c.Completed())
}

func TestReplaySubjectReplaysItsBufferThenTheEnding(t *testing.T) {
	s := rx.NewReplaySubject[int](2)
	for i := 1; i <= 4; i++ {
		s.OnNext(i)
	}
	assert.Equal(t, []int{3, 4}, rxtest.Record[int](nil, s).Values())
	s.OnCompleted()
	r := rxtest.Record[int](nil, s)
	assert.Equal(t, []int{3, 4}, r.Values())
	assert.True(t, r.Completed())
	all := rx.NewReplaySubject[int](0)
	all.OnNext(1)
	all.OnNext(2)
	assert.Equal(t, []int{1, 2}, rxtest.Record[int](nil, all).Values())
}

func TestShareSubscribesOnceForManyAndUnsubscribesWhenTheLastLeaves(t *testing.T) {
	clk := rxtest.NewClock()
	subscriptions, ended := 0, 0
	src := rx.Finally(rx.Defer(func() rx.Observable[int] {
		subscriptions++
		return rxtest.Cold(clk, rxtest.Next(10*tick, 1), rxtest.Next(20*tick, 2), rxtest.Next(30*tick, 3))
	}), func() { ended++ })
	shared := rx.Share(src)
	a := rxtest.Record(clk, shared)
	clk.Advance(15 * tick)
	b := rxtest.Record(clk, shared)
	clk.Advance(10 * tick)
	assert.Equal(t, 1, subscriptions)
	assert.Equal(t, []int{1, 2}, a.Values())
	assert.Equal(t, []int{2}, b.Values())
	a.Unsubscribe()
	assert.Equal(t, 0, ended, "one subscriber is still there")
	b.Unsubscribe()
	assert.Equal(t, 1, ended, "the last one left")
	assert.Zero(t, clk.Pending())
	c := rxtest.Record(clk, shared)
	clk.Advance(10 * tick)
	assert.Equal(t, 2, subscriptions, "a new subscriber reconnects")
	assert.Equal(t, []int{1}, c.Values())
	c.Unsubscribe()
}

func TestShareReconnectsAfterTheSourceEnded(t *testing.T) {
	n := 0
	shared := rx.Share(rx.Defer(func() rx.Observable[int] { n++; return rx.Of(n, n) }))
	assert.Equal(t, []int{1, 1}, rxtest.Record(nil, shared).Values())
	assert.Equal(t, []int{2, 2}, rxtest.Record(nil, shared).Values())
}

func TestFirstReturnsTheFirstValueAndUnsubscribes(t *testing.T) {
	var stopped bool
	src := rx.Finally(rx.Range(1, 1_000_000), func() { stopped = true })
	v, err := rx.First(context.Background(), src)
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	assert.True(t, stopped)
}

func TestFirstOnAnEmptyStreamReturnsErrEmpty(t *testing.T) {
	_, err := rx.First(context.Background(), rx.Empty[int]())
	assert.ErrorIs(t, err, rx.ErrEmpty)
	_, err = rx.First(context.Background(), rx.Throw[int](rxtest.ErrTest))
	assert.ErrorIs(t, err, rxtest.ErrTest)
}

func TestFirstAndCollectHonourContextCancellationAndLeaveNoGoroutine(t *testing.T) {
	for name, run := range map[string]func(context.Context, rx.Observable[int]) error{
		"First":   func(ctx context.Context, o rx.Observable[int]) error { _, err := rx.First(ctx, o); return err },
		"Collect": func(ctx context.Context, o rx.Observable[int]) error { _, err := rx.Collect(ctx, o); return err },
	} {
		t.Run(name, func(t *testing.T) {
			producerDone := make(chan struct{})
			src := rx.Create(func(ctx context.Context, o rx.Observer[int]) {
				go func() {
					defer close(producerDone)
					<-ctx.Done() // a producer that never answers
				}()
			})
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(10*time.Millisecond, cancel)
			err := run(ctx, src)
			assert.ErrorIs(t, err, context.Canceled)
			select {
			case <-producerDone: // the producer was told and left
			case <-time.After(5 * time.Second):
				t.Fatal("the producer was not unsubscribed")
			}
			// goleak in TestMain checks nothing else is left running.
		})
	}
}

func TestCollectGathersAllValuesOrStopsAtTheError(t *testing.T) {
	vs, err := rx.Collect(context.Background(), rx.Of(1, 2, 3))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3}, vs)
	vs, err = rx.Collect(context.Background(), rx.Concat(rx.Of(1), rx.Throw[int](rxtest.ErrTest)))
	assert.ErrorIs(t, err, rxtest.ErrTest)
	assert.Equal(t, []int{1}, vs)
}

func TestRetryErrorsAgainAfterItsAttemptsOnAThrowSource(t *testing.T) {
	// rxgo v2.5.0's Retry completes silently here; the last error must win.
	subscriptions := 0
	src := rx.Defer(func() rx.Observable[int] { subscriptions++; return rx.Throw[int](rxtest.ErrTest) })
	rec := rxtest.Record(nil, rx.Retry(src, 3))
	assert.ErrorIs(t, rec.Err(), rxtest.ErrTest)
	assert.Equal(t, 3, subscriptions)
	assert.False(t, rec.Completed())
}

func TestRetryResubscribesUntilASubscriptionSucceeds(t *testing.T) {
	n := 0
	src := rx.Defer(func() rx.Observable[int] {
		n++
		if n < 3 {
			return rx.Concat(rx.Of(n), rx.Throw[int](rxtest.ErrTest))
		}
		return rx.Of(n)
	})
	rec := rxtest.Record(nil, rx.Retry(src, 5))
	assert.Equal(t, []int{1, 2, 3}, rec.Values())
	assert.True(t, rec.Completed())
}

func TestRetryOfManySynchronousFailuresDoesNotGrowTheStack(t *testing.T) {
	n := 0
	rec := rxtest.Record(nil, rx.Retry(rx.Defer(func() rx.Observable[int] { n++; return rx.Throw[int](rxtest.ErrTest) }), 500_000))
	assert.ErrorIs(t, rec.Err(), rxtest.ErrTest)
	assert.Equal(t, 500_000, n)
}

func TestCatchContinuesWithTheHandlersObservable(t *testing.T) {
	var seen error
	rec := rxtest.Record(nil, rx.Catch(rx.Concat(rx.Of(1), rx.Throw[int](rxtest.ErrTest)), func(err error) rx.Observable[int] {
		seen = err
		return rx.Of(2, 3)
	}))
	assert.Equal(t, []int{1, 2, 3}, rec.Values())
	assert.True(t, rec.Completed())
	assert.ErrorIs(t, seen, rxtest.ErrTest)
	rethrown := rxtest.Record(nil, rx.Catch(rx.Throw[int](rxtest.ErrTest), func(error) rx.Observable[int] { return nil }))
	assert.ErrorIs(t, rethrown.Err(), rxtest.ErrTest)
}

func TestFinallyRunsOnceAfterTheEndOrOnUnsubscribe(t *testing.T) {
	var order []string
	rx.Finally(rx.Of(1), func() { order = append(order, "finally") }).Subscribe(rx.NewObserver[int](nil, nil, func() { order = append(order, "completed") }))
	assert.Equal(t, []string{"completed", "finally"}, order)
	n := 0
	sub := rx.Finally(rx.Never[int](), func() { n++ }).Subscribe(rx.NewObserver[int](nil, nil, nil))
	sub.Unsubscribe()
	sub.Unsubscribe()
	assert.Equal(t, 1, n)
}

func TestCreationOperatorsRefuseNilsWithClearErrors(t *testing.T) {
	assert.ErrorContains(t, rxtest.Record(nil, rx.Defer(func() rx.Observable[int] { return nil })).Err(), "nil Observable")
	assert.ErrorContains(t, rxtest.Record(nil, rx.Throw[int](nil)).Err(), "nil error")
}

func TestTransformsComposeAndKeepTheGrammar(t *testing.T) {
	src := rx.Scan(rx.DistinctUntilChanged(rx.Of(1, 1, 2, 2, 3, 1)), 0, func(acc, v int) int { return acc + v })
	var seen []int
	rec := rxtest.Record(nil, rx.Do(src, func(v int) { seen = append(seen, v) }))
	assert.Equal(t, []int{1, 3, 6, 7}, rec.Values())
	assert.Equal(t, rec.Values(), seen)
	require.NoError(t, rec.GrammarErr())
	assert.True(t, errors.Is(rxtest.Record(nil, rx.Map(rx.Throw[int](rxtest.ErrTest), func(v int) int { return v })).Err(), rxtest.ErrTest))
}
