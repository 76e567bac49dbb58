package rx

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// Delay shifts every value and the completion by d on clk, keeping their
// order. An error is not delayed: it is delivered at once and drops the
// values still waiting. One timer per subscription, armed for the earliest
// waiting value.
//
// It holds the values of the last d, at most QueueLimit of them: a producer
// on another goroutine that finds QueueLimit values waiting for their time
// waits for room (until the subscription ends, which drops its value), so a
// source faster than QueueLimit values per d is slowed and loses nothing;
// its values then leave later than d after they were offered. A value that
// must not wait fails the stream with an *OverflowError instead: one
// delivered from inside this stage's own delivery (re-entrantly), or by a
// source emitting inside Subscribe. A producer that also advances clk (a
// test on a virtual clock) must not push more than QueueLimit values
// between two advances: it would wait for itself.
func Delay[T any](src Observable[T], d time.Duration, clk clock.Clock) Observable[T] {
	mustArg(clk == nil, "Delay", "clock")
	if src == nil {
		return nilSource[T]("Delay", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		s := &delaySink[T]{clk: clk, d: d, sw: newStopwatch(clk), sc: sc, up: sc.child()}
		s.out.init(down, sc)
		sc.onCancel(s.stopTimer)
		s.subscribing.Store(curg())
		defer s.subscribing.Store(0)
		subscribeIn[T](src, s, s.up)
		return sc
	})
}

type delayed[T any] struct {
	at time.Duration
	n  note[T]
}

type delaySink[T any] struct {
	out serial[T]
	clk clock.Clock
	d   time.Duration
	sw  stopwatch
	sc  *scope
	up  *scope

	// The goroutines that must not wait for room (curg(), 0 for none): the
	// one inside Subscribe and the one delivering what is due.
	subscribing, delivering atomic.Uintptr

	mu      sync.Mutex
	queue   queue[delayed[T]]
	room    room // where producers wait for values to leave a full queue
	armed   bool
	stop    func() bool
	stopped bool
}

func (s *delaySink[T]) enqueue(n note[T]) {
	s.mu.Lock()
	for n.kind == kindNext && s.queue.len() >= QueueLimit && !s.stopped && !s.up.cancelled() {
		if g := curg(); g == s.subscribing.Load() || g == s.delivering.Load() {
			s.mu.Unlock()
			s.OnError(&OverflowError{Op: "Delay", Limit: QueueLimit, What: "values waiting for their time"})
			return
		}
		if !s.room.wait(&s.mu, s.up.doneChan()) {
			s.mu.Lock() // and find up cancelled
		}
	}
	defer s.mu.Unlock()
	if s.stopped || s.up.cancelled() {
		return
	}
	s.queue.push(delayed[T]{at: s.sw.elapsed() + s.d, n: n})
	if !s.armed {
		s.armed = true
		s.stop = after(s.clk, s.d, s.fire)
	}
}

func (s *delaySink[T]) fire() {
	if s.sc.cancelled() {
		return
	}
	now := s.sw.elapsed()
	s.mu.Lock()
	var due []delayed[T]
	for s.queue.len() > 0 && s.queue.front().at <= now {
		due = append(due, s.queue.pop())
	}
	s.wake()
	s.mu.Unlock()
	prev := s.delivering.Swap(curg())
	defer s.delivering.Store(prev)
	// Deliver before re-arming so a later batch can never overtake this one.
	for _, e := range due {
		switch e.n.kind {
		case kindNext:
			s.out.OnNext(e.n.v)
		default:
			s.up.cancel()
			s.out.OnCompleted()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	if s.stopped || s.queue.len() == 0 {
		return
	}
	s.armed = true
	s.stop = after(s.clk, s.queue.front().at-s.sw.elapsed(), s.fire)
}

// wake lets the producers waiting for room look again; s.mu is held.
func (s *delaySink[T]) wake() { s.room.wake() }

func (s *delaySink[T]) stopTimer() {
	s.mu.Lock()
	s.stopped = true
	s.queue = queue[delayed[T]]{}
	s.wake()
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (s *delaySink[T]) OnNext(v T)   { s.enqueue(note[T]{kind: kindNext, v: v}) }
func (s *delaySink[T]) OnCompleted() { s.enqueue(note[T]{kind: kindCompleted}) }
func (s *delaySink[T]) OnError(err error) {
	s.stopTimer()
	s.up.cancel()
	s.out.OnError(err)
}
func (s *delaySink[T]) rxScope() *scope { return s.up }
