package rx

import "sync"

// ShareReplay multicasts src like Share and replays to each subscriber the
// last n values of the running connection (RxJS's
// shareReplay({bufferSize: n, refCount: true}); Rx.NET's
// Replay(n).RefCount() differs in keeping the buffer across reconnections).
// The first subscriber connects; when the last one leaves before src has
// ended, src is unsubscribed and the buffer dropped, and the next
// subscriber connects afresh. Once src has completed, later subscribers get
// the last n values and the completion without resubscribing; after an
// error the next subscriber connects afresh (RxJS's resetOnError). It holds
// at most n values, for as long as the ShareReplay observable is
// reachable once src has completed. n < 1 fails with an *ArgumentError.
func ShareReplay[T any](src Observable[T], n int) Observable[T] {
	if src == nil {
		return nilSource[T]("ShareReplay", "src")
	}
	if n < 1 {
		return fail[T](&ArgumentError{Op: "ShareReplay", Arg: "n", Value: n, Reason: "must be positive"})
	}
	s := &replayShared[T]{src: src, n: n}
	return observableFunc[T](s.subscribe)
}

type replayShared[T any] struct {
	src Observable[T]
	n   int

	mu    sync.Mutex
	conn  *replayConn[T]
	count int
}

type replayConn[T any] struct {
	subject *ReplaySubject[T]
	sc      *scope
	ended   bool // src completed: the connection replays for good; guarded by mu
}

func (s *replayShared[T]) subscribe(o Observer[T]) Subscription {
	s.mu.Lock()
	c, connect := s.conn, false
	if c == nil {
		c = &replayConn[T]{subject: NewReplaySubject[T](s.n), sc: newScope()}
		s.conn, connect = c, true
	}
	ended := c.ended
	if !ended {
		s.count++
	}
	s.mu.Unlock()

	sc := ensureScope(o)
	if !ended {
		sc.onCancel(func() { s.leave(c) })
	}
	c.subject.Subscribe(inScope(o, sc))
	if connect {
		subscribeIn[T](s.src, &replaySource[T]{s: s, c: c}, c.sc)
	}
	return sc
}

func (s *replayShared[T]) leave(c *replayConn[T]) {
	s.mu.Lock()
	if s.conn != c || c.ended {
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

type replaySource[T any] struct {
	s *replayShared[T]
	c *replayConn[T]
}

func (x *replaySource[T]) OnNext(v T) { x.c.subject.OnNext(v) }
func (x *replaySource[T]) OnError(err error) {
	x.s.mu.Lock()
	if x.s.conn == x.c {
		x.s.conn, x.s.count = nil, 0
	}
	x.s.mu.Unlock()
	x.c.subject.OnError(err)
	x.c.sc.cancel()
}
func (x *replaySource[T]) OnCompleted() {
	x.s.mu.Lock()
	if x.s.conn == x.c {
		x.c.ended, x.s.count = true, 0
	}
	x.s.mu.Unlock()
	x.c.subject.OnCompleted()
	x.c.sc.cancel()
}
func (x *replaySource[T]) rxScope() *scope { return x.c.sc }
