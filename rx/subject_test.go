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
