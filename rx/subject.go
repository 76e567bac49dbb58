package rx

import (
	"errors"
	"sync"
	"sync/atomic"
)

// Subject is both an Observer and a hot Observable: every value it receives
// goes to the observers subscribed at that moment. Its Observer methods may be
// called from any goroutine; calls are serialised, and a call made from
// inside a notification is queued behind it rather than nested. After a
// terminal notification, late subscribers receive that terminal notification.
type Subject[T any] struct {
	subjectCore[T]
}

// NewSubject returns a Subject with no observers.
func NewSubject[T any]() *Subject[T] {
	s := &Subject[T]{}
	s.mb.h = s
	return s
}

// OnNext passes v to the current observers. With the mailbox idle (one
// producer, not from inside a delivery) it delivers at once through the
// mailbox's fast path (take, delivery, leave, with unwind deferred for a
// panic: see mailbox.take), making no event and no call through the handler
// interface; otherwise the value is posted as the subjects' other
// notifications are.
func (s *Subject[T]) OnNext(v T) {
	if s.stopped.Load() {
		return
	}
	g := curg()
	if !s.mb.take(g) {
		s.mb.postSlow(subjectEvent[T]{kind: kindNext, v: v}, g, nil, false)
		return
	}
	defer s.mb.unwind(g)
	if cur := s.list.Load(); cur != nil && len(*cur) == 1 {
		// One subscriber, the common case: delivered here, as emit's
		// deliver does, with no call into emit's loop (neither is inlined).
		switch sub := (*cur)[0]; {
		case sub.sc.cancelled():
		case sub.step != nil:
			sub.step(v)
		default:
			sub.o.OnNext(v)
		}
	} else {
		s.emit(v)
	}
	s.mb.leave(g)
}

func (s *Subject[T]) handle(e subjectEvent[T]) {
	if e.kind == kindNext {
		s.emit(e.v)
		return
	}
	s.terminate(e.note())
}

// Subscribe adds o; it sees the values the subject receives from now on.
func (s *Subject[T]) Subscribe(o Observer[T]) Subscription {
	mustObserver(o, "Subject")
	sc := ensureScope(o)
	sub := newSubscriber(o, sc)
	if t, ok := s.add(sub); ok {
		if !sc.cancelled() { // a chain that has already ended is not called
			t.replay(o)
		}
		return sc
	}
	sc.onCancel(func() { s.remove(sub) })
	return sc
}

func (s *Subject[T]) rxNative() {}

// subscribeEvent runs a subscription that replays (Behavior, Replay) in the
// subject's delivery order. Called from inside a delivery on the delivering
// goroutine, it runs at once, nested: the state it replays already includes
// the value being delivered, and the new observer is not among those the
// current delivery walks, so it sees every value once and in order (First on
// the subject from inside its own notification returns at once). Otherwise
// it is posted like a value.
func (s *subjectCore[T]) subscribeEvent(sub *subscriber[T], handle func(subjectEvent[T])) {
	e := subjectEvent[T]{kind: kindSubscribe, sub: sub}
	if s.mb.delivering(curg()) {
		handle(e)
		return
	}
	s.mb.post(e, sub.sc)
}

// admit adds sub after its replay, unless it ended meanwhile; a cancellation
// racing from another goroutine either sees it in the list or is seen here.
// It reports whether sub is now live.
func (s *subjectCore[T]) admit(sub *subscriber[T]) (note[T], bool) {
	if sub.sc.cancelled() {
		return note[T]{}, false
	}
	t, ended := s.add(sub)
	if ended {
		return t, true
	}
	if sub.sc.cancelled() {
		s.remove(sub)
	}
	return note[T]{}, false
}

// subscriber is one observer of a subject, with its subscription's scope
// and, when the observer is a stage that fuses, the fused chain's step: a
// subject delivering a value to a chain of such stages makes one direct call
// (see fuse.go).
type subscriber[T any] struct {
	o    Observer[T]
	sc   *scope
	step func(T) bool // nil: o.OnNext
}

func newSubscriber[T any](o Observer[T], sc *scope) *subscriber[T] {
	sub := &subscriber[T]{o: direct(o), sc: sc}
	if f := fuseOf(o); f != nil {
		sub.step = f.step
	}
	return sub
}

// deliver passes v to the subscriber unless it has unsubscribed.
func (sub *subscriber[T]) deliver(v T) {
	switch {
	case sub.sc.cancelled():
	case sub.step != nil:
		sub.step(v)
	default:
		sub.o.OnNext(v)
	}
}

type subjectEvent[T any] struct {
	kind kind
	v    T
	err  error
	sub  *subscriber[T] // set for subscribe events (kind == kindSubscribe)
}

const kindSubscribe kind = 3

func (e subjectEvent[T]) note() note[T] { return note[T]{kind: e.kind, v: e.v, err: e.err} }

func (n note[T]) replay(o Observer[T]) {
	if n.kind == kindError {
		o.OnError(n.err)
	} else {
		o.OnCompleted()
	}
}

// subjectCore holds what every subject shares: the serialised input, the
// copy-on-write observer list, and the terminal notification once there is one.
type subjectCore[T any] struct {
	mb      mailbox[subjectEvent[T]]
	stopped atomic.Bool
	list    atomic.Pointer[[]*subscriber[T]]

	mu   sync.Mutex
	term *note[T]

	finished bool // owned by the mailbox handler: the terminal notification was handled
}

// terminated reports, to the mailbox handler, whether the subject has ended;
// a value queued behind the end is then dropped, never recorded.
func (s *subjectCore[T]) terminated() bool { return s.finished }

// ErrNilError replaces a nil error passed to OnError (of a subject, of
// Create's observer): a failure is never reported as success.
var ErrNilError = errors.New("rx: OnError was called with a nil error")

// OnNext passes v to the current observers.
func (s *subjectCore[T]) OnNext(v T) {
	if !s.stopped.Load() {
		s.mb.post(subjectEvent[T]{kind: kindNext, v: v}, nil)
	}
}

// OnError ends the subject with err.
func (s *subjectCore[T]) OnError(err error) {
	if err == nil {
		err = ErrNilError
	}
	if !s.stopped.Swap(true) {
		s.mb.postEnd(subjectEvent[T]{kind: kindError, err: err})
	}
}

// OnCompleted ends the subject.
func (s *subjectCore[T]) OnCompleted() {
	if !s.stopped.Swap(true) {
		s.mb.postEnd(subjectEvent[T]{kind: kindCompleted})
	}
}

// add registers sub unless the subject has terminated, in which case it
// returns the terminal notification to replay.
func (s *subjectCore[T]) add(sub *subscriber[T]) (note[T], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term != nil {
		return *s.term, true
	}
	var next []*subscriber[T]
	if cur := s.list.Load(); cur != nil {
		next = make([]*subscriber[T], 0, len(*cur)+1)
		next = append(next, *cur...)
	}
	next = append(next, sub)
	s.list.Store(&next)
	return note[T]{}, false
}

// HasObservers reports whether any observer is subscribed (Rx.NET's
// HasObservers): one whose subscription has ended is not.
func (s *subjectCore[T]) HasObservers() bool {
	cur := s.list.Load()
	return cur != nil && len(*cur) > 0
}

func (s *subjectCore[T]) remove(sub *subscriber[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.list.Load()
	if cur == nil {
		return
	}
	for i, x := range *cur {
		if x == sub {
			next := make([]*subscriber[T], 0, len(*cur)-1)
			next = append(next, (*cur)[:i]...)
			next = append(next, (*cur)[i+1:]...)
			s.list.Store(&next)
			return
		}
	}
}

// emit delivers v to the current observers; the mailbox handler calls it.
func (s *subjectCore[T]) emit(v T) {
	cur := s.list.Load()
	if cur == nil {
		return
	}
	for _, sub := range *cur {
		sub.deliver(v)
	}
}

// terminate records n as the terminal notification and delivers it to the
// observers outside any lock, so an observer may call back into the subject.
func (s *subjectCore[T]) terminate(n note[T]) []*subscriber[T] {
	s.finished = true
	s.mu.Lock()
	if s.term != nil {
		s.mu.Unlock()
		return nil
	}
	s.term = &n
	cur := s.list.Swap(nil)
	s.mu.Unlock()
	if cur == nil {
		return nil
	}
	for _, sub := range *cur {
		if !sub.sc.cancelled() {
			n.replay(sub.o)
		}
	}
	return *cur
}
