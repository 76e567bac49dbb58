package rx

// CombineLatest2 emits f(a, b) of the latest values of a and b whenever
// either emits, once both have emitted. It completes when both have completed,
// or as soon as one completes without ever having emitted (no pair can form).
func CombineLatest2[A, B, R any](a Observable[A], b Observable[B], f func(A, B) R) Observable[R] {
	mustArg(f == nil, "CombineLatest2", "function f")
	if a == nil {
		return nilSource[R]("CombineLatest2", "a")
	}
	if b == nil {
		return nilSource[R]("CombineLatest2", "b")
	}
	return observableFunc[R](func(down Observer[R]) Subscription {
		sc := ensureScope(down)
		c := &combiner[A, B, R]{down: direct(down), f: f, sc: sc, work: sc.child()}
		c.mb.h = c
		sa, sb := c.work.child(), c.work.child()
		subscribeIn[A](a, &combineA[A, B, R]{c: c, sc: sa}, sa)
		subscribeIn[B](b, &combineB[A, B, R]{c: c, sc: sb}, sb)
		return sc
	})
}

type combineEvent[A, B any] struct {
	side int // 0: a, 1: b
	kind kind
	a    A
	b    B
	err  error
}

type combiner[A, B, R any] struct {
	down Observer[R]
	f    func(A, B) R
	sc   *scope
	work *scope
	mb   mailbox[combineEvent[A, B]]

	// owned by the mailbox handler
	a            A
	b            B
	hasA, hasB   bool
	doneA, doneB bool
	finished     bool
}

func (c *combiner[A, B, R]) handle(e combineEvent[A, B]) {
	if c.finished || c.sc.cancelled() {
		return
	}
	switch e.kind {
	case kindNext:
		if e.side == 0 {
			c.a, c.hasA = e.a, true
		} else {
			c.b, c.hasB = e.b, true
		}
		if c.hasA && c.hasB {
			r := c.f(c.a, c.b)
			if c.sc.cancelled() { // f unsubscribed
				return
			}
			c.down.OnNext(r)
		}
	case kindError:
		c.finished = true
		c.mb.close()
		c.work.cancel()
		c.down.OnError(e.err)
	default:
		if e.side == 0 {
			c.doneA = true
		} else {
			c.doneB = true
		}
		if (c.doneA && c.doneB) || (e.side == 0 && !c.hasA) || (e.side == 1 && !c.hasB) {
			c.finished = true
			c.mb.close()
			c.work.cancel()
			c.down.OnCompleted()
		}
	}
}

type combineA[A, B, R any] struct {
	c  *combiner[A, B, R]
	sc *scope
}

func (o *combineA[A, B, R]) OnNext(v A) {
	o.c.mb.post(combineEvent[A, B]{side: 0, kind: kindNext, a: v}, o.sc)
}
func (o *combineA[A, B, R]) OnError(err error) {
	o.c.mb.postEnd(combineEvent[A, B]{side: 0, kind: kindError, err: err})
}
func (o *combineA[A, B, R]) OnCompleted() {
	o.sc.cancel()
	o.c.mb.postEnd(combineEvent[A, B]{side: 0, kind: kindCompleted})
}
func (o *combineA[A, B, R]) rxScope() *scope { return o.sc }

type combineB[A, B, R any] struct {
	c  *combiner[A, B, R]
	sc *scope
}

func (o *combineB[A, B, R]) OnNext(v B) {
	o.c.mb.post(combineEvent[A, B]{side: 1, kind: kindNext, b: v}, o.sc)
}
func (o *combineB[A, B, R]) OnError(err error) {
	o.c.mb.postEnd(combineEvent[A, B]{side: 1, kind: kindError, err: err})
}
func (o *combineB[A, B, R]) OnCompleted() {
	o.sc.cancel()
	o.c.mb.postEnd(combineEvent[A, B]{side: 1, kind: kindCompleted})
}
func (o *combineB[A, B, R]) rxScope() *scope { return o.sc }
