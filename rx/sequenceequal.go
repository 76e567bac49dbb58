package rx

// SequenceEqual emits true if a and b emit equal values (==) in the same
// order and both complete, and false as soon as they differ: at the first
// unequal pair, or when one completes while the other has emitted more; both
// are then unsubscribed (Rx.NET's SequenceEqual; RxJS's sequenceEqual
// agrees). The first error of either side fails it. Values of the side that
// is ahead wait for their partners, at most ZipLimit of them, as Zip2's do:
// a side that gets further ahead fails the stream with an *OverflowError
// rather than growing memory without bound. A side that emits synchronously
// inside Subscribe is read in full before the other is subscribed, so compare
// such sources only when they are shorter than ZipLimit. Over an interface
// T, a pair of values of different dynamic types is unequal, as for ==; a
// pair that == cannot compare (both hold the same uncomparable dynamic type,
// on which == panics) fails the stream with an *UncomparableError when its
// second value arrives.
func SequenceEqual[T comparable](a, b Observable[T]) Observable[bool] {
	if a == nil {
		return nilSource[bool]("SequenceEqual", "a")
	}
	if b == nil {
		return nilSource[bool]("SequenceEqual", "b")
	}
	check := mayHoldUncomparable[T]()
	return observableFunc[bool](func(down Observer[bool]) Subscription {
		sc := ensureScope(down)
		q := &seqEqual[T]{down: direct(down), sc: sc, work: sc.child(), check: check}
		q.mb.h = q
		sa, sb := q.work.child(), q.work.child()
		subscribeIn[T](a, &seqEqualSide[T]{q: q, sc: sa}, sa)
		if !q.work.cancelled() {
			subscribeIn[T](b, &seqEqualSide[T]{q: q, sc: sb, b: true}, sb)
		}
		return sc
	})
}

type seqEqualEvent[T any] struct {
	fromB bool
	kind  kind
	v     T
	err   error
}

type seqEqual[T comparable] struct {
	down  Observer[bool]
	sc    *scope
	work  *scope
	mb    mailbox[seqEqualEvent[T]]
	check bool // T may hold values == cannot compare: see mayHoldUncomparable

	// read and written by the mailbox handler only: the values of the side
	// ahead (only one side is ever ahead), and which sides have completed.
	ahead        queue[T]
	aheadIsB     bool
	aDone, bDone bool
	finished     bool
}

func (q *seqEqual[T]) handle(e seqEqualEvent[T]) {
	if q.finished || q.sc.cancelled() {
		return
	}
	switch e.kind {
	case kindError:
		q.end(false, e.err)
	case kindCompleted:
		if e.fromB {
			q.bDone = true
		} else {
			q.aDone = true
		}
		switch {
		case q.aDone && q.bDone:
			q.end(q.ahead.len() == 0, nil)
		case q.ahead.len() > 0 && q.aheadIsB != e.fromB:
			// The other side is ahead of the one that ended: it has more.
			q.end(false, nil)
		}
	default:
		if q.ahead.len() > 0 && q.aheadIsB != e.fromB {
			partner := q.ahead.pop()
			if !q.check {
				if partner != e.v {
					q.end(false, nil)
				}
				return
			}
			what, with := "value of a", "its partner of b"
			if e.fromB {
				what, with = "value of b", "its partner of a"
			}
			switch eq, err := equalChecked("SequenceEqual", what, with, e.v, partner); {
			case err != nil:
				q.end(false, err)
			case !eq:
				q.end(false, nil)
			}
			return
		}
		// This side is ahead (or level): if the other has ended, it has more.
		if (e.fromB && q.aDone) || (!e.fromB && q.bDone) {
			q.end(false, nil)
			return
		}
		q.aheadIsB = e.fromB
		q.ahead.push(e.v)
		if q.ahead.len() > ZipLimit {
			q.end(false, &OverflowError{Op: "SequenceEqual", Limit: ZipLimit})
		}
	}
}

func (q *seqEqual[T]) end(equal bool, err error) {
	q.finished = true
	q.mb.close()
	q.ahead = queue[T]{}
	q.work.cancel()
	if err != nil {
		q.down.OnError(err)
		return
	}
	q.down.OnNext(equal)
	if !q.sc.cancelled() {
		q.down.OnCompleted()
	}
}

type seqEqualSide[T comparable] struct {
	q  *seqEqual[T]
	sc *scope
	b  bool
}

func (s *seqEqualSide[T]) OnNext(v T) {
	s.q.mb.post(seqEqualEvent[T]{fromB: s.b, kind: kindNext, v: v}, s.sc)
}
func (s *seqEqualSide[T]) OnError(err error) {
	s.q.mb.postEnd(seqEqualEvent[T]{fromB: s.b, kind: kindError, err: err})
}
func (s *seqEqualSide[T]) OnCompleted() {
	s.q.mb.postEnd(seqEqualEvent[T]{fromB: s.b, kind: kindCompleted})
}
func (s *seqEqualSide[T]) rxScope() *scope { return s.sc }
