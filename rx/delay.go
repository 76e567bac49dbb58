package rx

import (
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// Delay shifts every value and the completion by d on clk, keeping their
// order. An error is not delayed: it is delivered at once and drops the
// values still waiting. One timer per subscription, armed for the earliest
// waiting value. It holds the values of the last d by meaning (each until
// its time comes), so its memory is the source's rate times d: bound the
// rate where that can be large (Throttle, Sample).
func Delay[T any](src Observable[T], d time.Duration, clk clock.Clock) Observable[T] {
	mustArg(clk == nil, "Delay", "clock")
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		s := &delaySink[T]{clk: clk, d: d, sw: newStopwatch(clk), sc: sc, up: sc.child()}
		s.out.init(down, sc)
		sc.onCancel(s.stopTimer)
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

	mu      sync.Mutex
	queue   []delayed[T]
	armed   bool
	stop    func() bool
	stopped bool
}

func (s *delaySink[T]) enqueue(n note[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.queue = append(s.queue, delayed[T]{at: s.sw.elapsed() + s.d, n: n})
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
	i := 0
	for i < len(s.queue) && s.queue[i].at <= now {
		i++
	}
	due := append([]delayed[T](nil), s.queue[:i]...)
	s.queue = s.queue[i:]
	s.mu.Unlock()
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
	if s.stopped || len(s.queue) == 0 {
		return
	}
	s.armed = true
	s.stop = after(s.clk, s.queue[0].at-s.sw.elapsed(), s.fire)
}

func (s *delaySink[T]) stopTimer() {
	s.mu.Lock()
	s.stopped = true
	s.queue = nil
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
