package rx

// AsyncSubject keeps the last value it receives and, on completion, delivers
// that value and the completion to every observer, outside any lock (an
// observer may call back into the subject). An error is delivered instead
// when it fails. Observers subscribing after the end receive the same
// outcome synchronously, inside Subscribe.
type AsyncSubject[T any] struct {
	subjectCore[T]
	value    T    // owned by the mailbox handler until termination
	hasValue bool // likewise
}

// NewAsyncSubject returns an AsyncSubject that has received nothing.
func NewAsyncSubject[T any]() *AsyncSubject[T] {
	s := &AsyncSubject[T]{}
	s.mb.h = s
	return s
}

func (s *AsyncSubject[T]) handle(e subjectEvent[T]) {
	switch e.kind {
	case kindNext:
		if s.finished {
			return
		}
		s.value, s.hasValue = e.v, true
	case kindError:
		s.terminate(e.note())
	default:
		s.finished = true
		s.mu.Lock()
		if s.term != nil {
			s.mu.Unlock()
			return
		}
		n := note[T]{kind: kindCompleted, v: s.value}
		if s.hasValue {
			n.kind = kindNext // completion that carries a value
		}
		s.term = &n
		cur := s.list.Swap(nil)
		s.mu.Unlock()
		if cur == nil {
			return
		}
		for _, sub := range *cur {
			if !sub.sc.cancelled() {
				s.replayTo(n, sub)
			}
		}
	}
}

func (s *AsyncSubject[T]) replayTo(n note[T], sub *subscriber[T]) {
	switch n.kind {
	case kindNext:
		sub.o.OnNext(n.v)
		if !sub.sc.cancelled() {
			sub.o.OnCompleted()
		}
	default:
		n.replay(sub.o)
	}
}

// Subscribe adds o; after the end it replays the outcome at once.
func (s *AsyncSubject[T]) Subscribe(o Observer[T]) Subscription {
	mustObserver(o, "AsyncSubject")
	sc := ensureScope(o)
	sub := newSubscriber(o, sc)
	if t, ok := s.add(sub); ok {
		// A chain that has already ended (unsubscribed inside a user
		// function, say) must not be called, as in the delivery above.
		if !sc.cancelled() {
			s.replayTo(t, sub)
		}
		return sc
	}
	sc.onCancel(func() { s.remove(sub) })
	return sc
}

func (s *AsyncSubject[T]) rxNative() {}
