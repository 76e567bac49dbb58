package rx

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func (s *subjectCore[T]) liveSubscribers() int {
	if cur := s.list.Load(); cur != nil {
		return len(*cur)
	}
	return 0
}

func TestSubjectsKeepNoSubscriberThatEndedDuringItsReplay(t *testing.T) {
	r := NewReplaySubject[int](0)
	r.OnNext(1)
	b := NewBehaviorSubject(1)
	for range 1000 {
		_, _ = First[int](context.Background(), r)
		_, _ = First[int](context.Background(), Take[int](b, 1))
	}
	assert.Zero(t, r.liveSubscribers(), "ReplaySubject")
	assert.Zero(t, b.liveSubscribers(), "BehaviorSubject")

	t.Run("cancellation racing the subscribe from another goroutine", func(t *testing.T) {
		for range 1000 {
			sc := newScope()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); sc.cancel() }()
			r.Subscribe(inScope[int](NewObserver[int](nil, nil, nil), sc))
			b.Subscribe(inScope[int](NewObserver[int](nil, nil, nil), sc))
			wg.Wait()
		}
		assert.Zero(t, r.liveSubscribers())
		assert.Zero(t, b.liveSubscribers())
	})
	t.Run("control: a subscriber that did not end is kept", func(t *testing.T) {
		sub := r.Subscribe(NewObserver[int](nil, nil, nil))
		assert.Equal(t, 1, r.liveSubscribers())
		sub.Unsubscribe()
		assert.Zero(t, r.liveSubscribers())
	})
}
