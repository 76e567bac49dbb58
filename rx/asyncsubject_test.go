package rx_test

import (
	"context"
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
