package rx

// BehaviorSubject is a Subject that remembers its latest value (starting with
// an initial one) and gives it to each new observer before anything else.
// After completion new observers receive only the completion; after an error,
// the error.
type BehaviorSubject[T any] struct {
	subjectCore[T]
	value T    // guarded by mu: the latest value accepted by OnNext
	ended bool // guarded by mu: OnError or OnCompleted was called
	last  T    // owned by the mailbox handler: the latest value delivered
}

// NewBehaviorSubject returns a BehaviorSubject holding initial.
func NewBehaviorSubject[T any](initial T) *BehaviorSubject[T] {
	s := &BehaviorSubject[T]{value: initial, last: initial}
	s.mb.h = s
	return s
}

// Value returns the latest value: the argument of the last OnNext call made
// before the subject ended, even if that value is still queued behind the
// notification being delivered (a re-entrant OnNext). It never changes once
// OnError or OnCompleted has been called.
func (s *BehaviorSubject[T]) Value() T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value
}

// OnNext makes v the latest value and passes it to the current observers.
func (s *BehaviorSubject[T]) OnNext(v T) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.value = v
	s.mu.Unlock()
	s.subjectCore.OnNext(v)
}

// OnError ends the subject with err.
func (s *BehaviorSubject[T]) OnError(err error) {
	s.end()
	s.subjectCore.OnError(err)
}

// OnCompleted ends the subject.
func (s *BehaviorSubject[T]) OnCompleted() {
	s.end()
	s.subjectCore.OnCompleted()
}

func (s *BehaviorSubject[T]) end() {
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
}

func (s *BehaviorSubject[T]) handle(e subjectEvent[T]) {
	switch e.kind {
	case kindNext:
		if s.terminated() {
			return
		}
		s.last = e.v
		s.emit(e.v)
	case kindSubscribe:
		if e.sub.sc.cancelled() {
			return
		}
		if s.terminated() {
			if t, ok := s.admit(e.sub); ok {
				t.replay(e.sub.o)
			}
			return
		}
		e.sub.o.OnNext(s.last)
		if t, ok := s.admit(e.sub); ok {
			t.replay(e.sub.o)
		}
	default:
		s.terminate(e.note())
	}
}

// Subscribe adds o, which first receives the latest value. The subscription
// is ordered with the values the subject receives, so o never sees an older
// value after a newer one. Made from inside one of the subject's own
// notifications, it replays at once (see subscribeEvent).
func (s *BehaviorSubject[T]) Subscribe(o Observer[T]) Subscription {
	mustObserver(o, "BehaviorSubject")
	sc := ensureScope(o)
	sub := newSubscriber(o, sc)
	sc.onCancel(func() { s.remove(sub) })
	s.subscribeEvent(sub, s.handle)
	return sc
}

func (s *BehaviorSubject[T]) rxNative() {}
