package rx

import (
	"sync"
	"sync/atomic"
)

// mailbox serialises calls to handle from any number of goroutines without
// holding a lock while handle runs: the caller that finds it idle runs the
// handler and then drains whatever arrived meanwhile; everyone else enqueues
// and returns. A handler that posts to its own mailbox is queued behind the
// current call rather than deadlocking.
type mailbox[E any] struct {
	wip    atomic.Int64
	mu     sync.Mutex
	q      []E
	spare  []E
	handle func(E)
}

func (m *mailbox[E]) post(e E) {
	if m.wip.CompareAndSwap(0, 1) {
		m.handle(e)
		if m.wip.CompareAndSwap(1, 0) {
			return
		}
	} else {
		m.mu.Lock()
		m.q = append(m.q, e)
		m.mu.Unlock()
		if m.wip.Add(1) != 1 {
			return
		}
	}
	m.drain()
}

func (m *mailbox[E]) drain() {
	missed := int64(1)
	for {
		m.mu.Lock()
		batch := m.q
		m.q = m.spare
		m.mu.Unlock()
		var zero E
		for i := range batch {
			m.handle(batch[i])
			batch[i] = zero
		}
		m.spare = batch[:0]
		missed = m.wip.Add(-missed)
		if missed == 0 {
			return
		}
	}
}

type kind uint8

const (
	kindNext kind = iota
	kindError
	kindCompleted
)

type note[T any] struct {
	kind kind
	v    T
	err  error
}

// serial is an Observer that may be called from several goroutines at once
// and delivers to down one call at a time, in arrival order, keeping the
// grammar: nothing after a terminal notification or after sc is cancelled.
type serial[T any] struct {
	down     Observer[T]
	sc       *scope
	mb       mailbox[note[T]]
	finished bool // read and written by the mailbox handler only
	stopped  atomic.Bool
}

func (s *serial[T]) init(down Observer[T], sc *scope) {
	s.down, s.sc = down, sc
	s.mb.handle = s.deliver
}

func (s *serial[T]) deliver(n note[T]) {
	if s.finished || s.sc.cancelled() {
		return
	}
	switch n.kind {
	case kindNext:
		s.down.OnNext(n.v)
	case kindError:
		s.finished = true
		s.down.OnError(n.err)
	default:
		s.finished = true
		s.down.OnCompleted()
	}
}

func (s *serial[T]) OnNext(v T) {
	if s.stopped.Load() {
		return
	}
	s.mb.post(note[T]{kind: kindNext, v: v})
}

func (s *serial[T]) OnError(err error) {
	if s.stopped.Swap(true) {
		return
	}
	s.mb.post(note[T]{kind: kindError, err: err})
}

func (s *serial[T]) OnCompleted() {
	if s.stopped.Swap(true) {
		return
	}
	s.mb.post(note[T]{kind: kindCompleted})
}

func (s *serial[T]) rxScope() *scope { return s.sc }
