package rx

// ReplaySubject is a Subject that replays to each new observer the last size
// values it received (all of them when size <= 0), then its terminal
// notification if it has ended. A value that reaches it after its terminal
// notification is neither delivered nor recorded.
type ReplaySubject[T any] struct {
	subjectCore[T]
	size int
	buf  []T // owned by the mailbox handler
}

// NewReplaySubject returns a ReplaySubject that keeps the last size values;
// size <= 0 keeps every value it ever receives, for as long as the subject
// is reachable (a collection, unbounded by meaning: give a size to a
// subject fed by an open stream).
func NewReplaySubject[T any](size int) *ReplaySubject[T] {
	s := &ReplaySubject[T]{size: size}
	s.mb.h = s
	return s
}

func (s *ReplaySubject[T]) handle(e subjectEvent[T]) {
	switch e.kind {
	case kindNext:
		if s.terminated() {
			return
		}
		if s.size > 0 && len(s.buf) == s.size {
			var zero T
			s.buf[0] = zero
			s.buf = s.buf[1:]
		}
		s.buf = append(s.buf, e.v)
		s.emit(e.v)
	case kindSubscribe:
		if e.sub.sc.cancelled() {
			return
		}
		// A nested subscription may run while the outer delivery is in
		// the middle of buf; replay a fixed snapshot of its length.
		buf := s.buf[:len(s.buf):len(s.buf)]
		for _, v := range buf {
			if e.sub.sc.cancelled() {
				return
			}
			e.sub.o.OnNext(v)
		}
		if t, ok := s.admit(e.sub); ok && !e.sub.sc.cancelled() {
			t.replay(e.sub.o)
		}
	default:
		s.terminate(e.note())
	}
}

// Subscribe adds o, which first receives the buffered values in order. Made
// from inside one of the subject's own notifications, it replays at once (see
// subscribeEvent).
func (s *ReplaySubject[T]) Subscribe(o Observer[T]) Subscription {
	mustObserver(o, "ReplaySubject")
	sc := ensureScope(o)
	sub := newSubscriber(o, sc)
	sc.onCancel(func() { s.remove(sub) })
	s.subscribeEvent(sub, s.handle)
	return sc
}

func (s *ReplaySubject[T]) rxNative() {}
