package rx

import "sync"

// Share multicasts src: the first subscriber connects it (one subscription to
// src for all), later subscribers join the running connection, and when the
// last one leaves the connection is unsubscribed. This is Rx's
// Publish().RefCount(), except that once src has terminated, the next
// subscriber starts a fresh connection instead of receiving the old ending.
func Share[T any](src Observable[T]) Observable[T] {
	if src == nil {
		return nilSource[T]("Share", "src")
	}
	s := &shared[T]{src: src}
	return observableFunc[T](s.subscribe)
}

type shared[T any] struct {
	src Observable[T]

	mu    sync.Mutex
	conn  *connection[T]
	count int
}

type connection[T any] struct {
	subject *Subject[T]
	sc      *scope
}

func (s *shared[T]) subscribe(o Observer[T]) Subscription {
	s.mu.Lock()
	c, connect := s.conn, false
	if c == nil {
		c = &connection[T]{subject: NewSubject[T](), sc: newScope()}
		s.conn, connect = c, true
	}
	s.count++
	s.mu.Unlock()

	sc := ensureScope(o)
	c.subject.Subscribe(inScope(o, sc))
	sc.onCancel(func() { s.leave(c) })
	if connect {
		subscribeIn[T](s.src, &shareSource[T]{s: s, c: c}, c.sc)
	}
	return sc
}

func (s *shared[T]) leave(c *connection[T]) {
	s.mu.Lock()
	if s.conn != c {
		s.mu.Unlock()
		return
	}
	s.count--
	last := s.count == 0
	if last {
		s.conn = nil
	}
	s.mu.Unlock()
	if last {
		c.sc.cancel()
	}
}

// reset forgets c once its source has terminated, so the next subscriber
// reconnects.
func (s *shared[T]) reset(c *connection[T]) {
	s.mu.Lock()
	if s.conn == c {
		s.conn, s.count = nil, 0
	}
	s.mu.Unlock()
}

type shareSource[T any] struct {
	s *shared[T]
	c *connection[T]
}

func (x *shareSource[T]) OnNext(v T) { x.c.subject.OnNext(v) }
func (x *shareSource[T]) OnError(err error) {
	x.s.reset(x.c)
	x.c.subject.OnError(err)
}
func (x *shareSource[T]) OnCompleted() {
	x.s.reset(x.c)
	x.c.subject.OnCompleted()
}
func (x *shareSource[T]) rxScope() *scope { return x.c.sc }
