package rx

// BehaviorSubject is a Subject that remembers its latest value (starting with
// an initial one) and gives it to each new observer before anything else.
// After completion new observers receive only the completion; after an error,
// the error.
type BehaviorSubject[T any] struct {
	subjectCore[T]
	value T // guarded by mu
}

// NewBehaviorSubject returns a BehaviorSubject holding initial.
func NewBehaviorSubject[T any](initial T) *BehaviorSubject[T] {
	s := &BehaviorSubject[T]{value: initial}
	s.mb.handle = s.handle
	return s
}

// Value returns the latest value.
func (s *BehaviorSubject[T]) Value() T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value
}

func (s *BehaviorSubject[T]) handle(e subjectEvent[T]) {
	switch e.kind {
	case kindNext:
		s.mu.Lock()
		s.value = e.v
		s.mu.Unlock()
		s.forEach(func(o Observer[T]) { o.OnNext(e.v) })
	case kindSubscribe:
		if e.sub.sc.cancelled() {
			return
		}
		if t, ok := s.add(e.sub); ok {
			t.replay(e.sub.o)
			return
		}
		if !e.sub.sc.cancelled() {
			e.sub.o.OnNext(s.Value())
		}
	default:
		s.terminate(e.note())
	}
}

// Subscribe adds o, which first receives the latest value. The subscription
// is ordered with the values the subject receives, so o never sees an older
// value after a newer one.
func (s *BehaviorSubject[T]) Subscribe(o Observer[T]) Subscription {
	sc := ensureScope(o)
	sub := &subscriber[T]{o: o, sc: sc}
	sc.onCancel(func() { s.remove(sub) })
	s.mb.post(subjectEvent[T]{kind: kindSubscribe, sub: sub})
	return sc
}

func (s *BehaviorSubject[T]) rxNative() {}
