package rx

import "fmt"

// ZipLimit is how many values one side of Zip2 may get ahead of the other.
// Zip2 holds those values until their partners arrive; a side that gets
// further ahead ends the stream with an *OverflowError rather than growing
// memory without bound.
const ZipLimit = 1 << 16

// OverflowError ends a stream whose operator would have had to hold more
// than Limit values (or, as What says, groups or waiting inner sources).
type OverflowError struct {
	Op    string
	Limit int
	What  string // what was held; "" for values waiting for their partners
}

func (e *OverflowError) Error() string {
	if e.What != "" {
		return fmt.Sprintf("rx.%s: more than %d %s", e.Op, e.Limit, e.What)
	}
	return fmt.Sprintf("rx.%s: more than %d values waiting for their partners", e.Op, e.Limit)
}

// Zip2 pairs the n-th value of a with the n-th value of b and emits f of
// them. It completes once a side has completed and every value it emitted
// has been paired, and fails with the first error of either side. Values of
// the side that is ahead wait for their partners, at most ZipLimit of them
// (beyond that the stream fails with an *OverflowError): a side that emits
// synchronously inside Subscribe is read in full before the other side is
// subscribed, so zip such sources only when they are shorter than that.
func Zip2[A, B, R any](a Observable[A], b Observable[B], f func(A, B) R) Observable[R] {
	mustArg(f == nil, "Zip2", "function f")
	if a == nil {
		return nilSource[R]("Zip2", "a")
	}
	if b == nil {
		return nilSource[R]("Zip2", "b")
	}
	return observableFunc[R](func(down Observer[R]) Subscription {
		sc := ensureScope(down)
		z := &zipper[A, B, R]{down: direct(down), sc: sc, work: sc.child(), f: f}
		z.mb.h = z
		sa, sb := z.work.child(), z.work.child()
		subscribeIn[A](a, &zipSideA[A, B, R]{z: z, sc: sa}, sa)
		if !z.work.cancelled() {
			subscribeIn[B](b, &zipSideB[A, B, R]{z: z, sc: sb}, sb)
		}
		return sc
	})
}

type zipEvent[A, B any] struct {
	fromB bool
	kind  kind
	a     A
	b     B
	err   error
}

// queue is a FIFO that gives its memory back as it drains.
type queue[T any] struct {
	vs   []T
	head int
}

func (q *queue[T]) len() int { return len(q.vs) - q.head }
func (q *queue[T]) push(v T) { q.vs = append(q.vs, v) }
func (q *queue[T]) front() T { return q.vs[q.head] }
func (q *queue[T]) pop() (v T) {
	v, q.vs[q.head] = q.vs[q.head], v
	q.head++
	if q.head == len(q.vs) {
		q.vs, q.head = q.vs[:0], 0
	} else if q.head >= 1024 && q.head*2 >= len(q.vs) {
		n := copy(q.vs, q.vs[q.head:])
		q.vs, q.head = q.vs[:n], 0
	}
	return v
}

type zipper[A, B, R any] struct {
	down Observer[R]
	sc   *scope
	work *scope
	f    func(A, B) R
	mb   mailbox[zipEvent[A, B]]

	// read and written by the mailbox handler only
	qa           queue[A]
	qb           queue[B]
	aDone, bDone bool
	finished     bool
}

func (z *zipper[A, B, R]) handle(e zipEvent[A, B]) {
	if z.finished || z.sc.cancelled() {
		return
	}
	switch e.kind {
	case kindError:
		z.end(e.err)
		return
	case kindCompleted:
		if e.fromB {
			z.bDone = true
		} else {
			z.aDone = true
		}
	default:
		if e.fromB {
			z.qb.push(e.b)
		} else {
			z.qa.push(e.a)
		}
		for z.qa.len() > 0 && z.qb.len() > 0 {
			r := z.f(z.qa.pop(), z.qb.pop())
			if z.sc.cancelled() { // f unsubscribed
				return
			}
			z.down.OnNext(r)
			if z.sc.cancelled() {
				return
			}
		}
		if z.qa.len() > ZipLimit || z.qb.len() > ZipLimit {
			z.end(&OverflowError{Op: "Zip2", Limit: ZipLimit})
			return
		}
	}
	if (z.aDone && z.qa.len() == 0) || (z.bDone && z.qb.len() == 0) {
		z.end(nil)
	}
}

func (z *zipper[A, B, R]) end(err error) {
	z.finished = true
	z.mb.close()
	z.qa, z.qb = queue[A]{}, queue[B]{}
	z.work.cancel()
	if err != nil {
		z.down.OnError(err)
	} else {
		z.down.OnCompleted()
	}
}

type zipSideA[A, B, R any] struct {
	z  *zipper[A, B, R]
	sc *scope
}

func (s *zipSideA[A, B, R]) OnNext(v A) { s.z.mb.post(zipEvent[A, B]{kind: kindNext, a: v}, s.sc) }
func (s *zipSideA[A, B, R]) OnError(err error) {
	s.z.mb.postEnd(zipEvent[A, B]{kind: kindError, err: err})
}
func (s *zipSideA[A, B, R]) OnCompleted()    { s.z.mb.postEnd(zipEvent[A, B]{kind: kindCompleted}) }
func (s *zipSideA[A, B, R]) rxScope() *scope { return s.sc }

type zipSideB[A, B, R any] struct {
	z  *zipper[A, B, R]
	sc *scope
}

func (s *zipSideB[A, B, R]) OnNext(v B) {
	s.z.mb.post(zipEvent[A, B]{fromB: true, kind: kindNext, b: v}, s.sc)
}
func (s *zipSideB[A, B, R]) OnError(err error) {
	s.z.mb.postEnd(zipEvent[A, B]{fromB: true, kind: kindError, err: err})
}
func (s *zipSideB[A, B, R]) OnCompleted() {
	s.z.mb.postEnd(zipEvent[A, B]{fromB: true, kind: kindCompleted})
}
func (s *zipSideB[A, B, R]) rxScope() *scope { return s.sc }
