package rx_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

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

func TestSubjectInputsFromManyGoroutinesReachObserversOneAtATime(t *testing.T) {
	s := rx.NewSubject[int]()
	rec := rxtest.Record[int](nil, s)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				s.OnNext(i)
			}
		}()
	}
	wg.Wait()
	s.OnCompleted()
	s.OnNext(-1)
	require.NoError(t, rec.GrammarErr())
	assert.Len(t, rec.Values(), 8000)
	assert.True(t, rec.Completed())
	assert.False(t, errors.Is(rec.Err(), rxtest.ErrTest))
}

// HasObservers says whether an observer is subscribed now: not before the
// first, not once the last has unsubscribed, not once the subject has
// ended (its observers have had their end).
func TestHasObserversSaysWhetherAnObserverIsSubscribedNow(t *testing.T) {
	s := rx.NewSubject[int]()
	assert.False(t, s.HasObservers(), "none yet")
	a := s.Subscribe(rx.NewObserver[int](nil, nil, nil))
	b := s.Subscribe(rx.NewObserver[int](nil, nil, nil))
	assert.True(t, s.HasObservers())
	a.Unsubscribe()
	assert.True(t, s.HasObservers(), "one left")
	b.Unsubscribe()
	assert.False(t, s.HasObservers(), "both gone")
	s.Subscribe(rx.NewObserver[int](nil, nil, nil))
	s.OnCompleted()
	assert.False(t, s.HasObservers(), "ended")
}

// A subject subscribed by a chain that has already ended (its subscriber
// unsubscribed from inside SelectMany's projection, which then returns the
// subject under DefaultIfEmpty and Map) calls nothing in that chain: not
// Map's function, not the observer, whether it has values or only an
// ending to replay at once. Negative controls (run): with AsyncSubject
// replaying to the ended chain as before, its rows "AsyncSubject" and
// "AsyncSubject empty" failed with "map" (its value, or DefaultIfEmpty's
// default, went into Map's function after Unsubscribe had returned); with
// Subject doing so, "Subject completed" failed with "map" (DefaultIfEmpty,
// given the completion, emitted its default into Map). The other rows
// passed both times.
func TestASubjectSubscribedByAChainThatHasEndedCallsNothingInIt(t *testing.T) {
	done := func(s interface{ OnCompleted() }) { s.OnCompleted() }
	sources := map[string]func() rx.Observable[int]{
		"Subject completed": func() rx.Observable[int] { s := rx.NewSubject[int](); done(s); return s },
		"Subject failed":    func() rx.Observable[int] { s := rx.NewSubject[int](); s.OnError(rxtest.ErrTest); return s },
		"BehaviorSubject":   func() rx.Observable[int] { return rx.NewBehaviorSubject(5) },
		"ReplaySubject":     func() rx.Observable[int] { s := rx.NewReplaySubject[int](2); s.OnNext(5); return s },
		"ReplaySubject ended": func() rx.Observable[int] {
			s := rx.NewReplaySubject[int](2)
			s.OnNext(5)
			done(s)
			return s
		},
		"AsyncSubject":       func() rx.Observable[int] { s := rx.NewAsyncSubject[int](); s.OnNext(5); done(s); return s },
		"AsyncSubject empty": func() rx.Observable[int] { s := rx.NewAsyncSubject[int](); done(s); return s },
		"AsyncSubject failed": func() rx.Observable[int] {
			s := rx.NewAsyncSubject[int]()
			s.OnError(rxtest.ErrTest)
			return s
		},
		"Share":       func() rx.Observable[int] { return rx.Share(rx.Of(5)) },
		"ShareReplay": func() rx.Observable[int] { return rx.ShareReplay(rx.Of(5), 1) },
	}
	for name, source := range sources {
		t.Run(name, func(t *testing.T) {
			run := func(unsubscribe bool) []string {
				outer := rx.NewSubject[int]()
				var sub rx.Subscription
				var calls []string
				log := func(s string) func() { return func() { calls = append(calls, s) } }
				sub = rx.SelectMany[int, int](outer, func(int) rx.Observable[int] {
					if unsubscribe {
						sub.Unsubscribe()
					}
					return rx.Map(rx.DefaultIfEmpty(source(), 7), func(v int) int { log("map")(); return v })
				}).Subscribe(rx.NewObserver(func(int) { log("next")() }, func(error) { log("error")() }, log("completed")))
				outer.OnNext(1)
				return calls
			}
			assert.Empty(t, run(true), "called after Unsubscribe had returned")
			assert.NotEmpty(t, run(false), "control: the live chain is called")
		})
	}
}
