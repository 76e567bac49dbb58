package rx

// GroupLimit is how many groups one GroupBy subscription may open; a value
// whose key would open one more ends the stream with an *OverflowError.
const GroupLimit = 1 << 16

// Group is one group of GroupBy: the values of the source whose key is Key.
type Group[K comparable, T any] struct {
	Key K
	Observable[T]
}

// GroupBy splits src by key: it emits a Group the first time a key is seen,
// just before that group's first value, and passes each value to its
// group. It follows Rx.NET's GroupBy (RxJS's groupBy without a duration
// selector agrees): a group lives until src ends — every group then
// completes (or fails with src's error) before the outer stream does — and
// src stays subscribed while the outer subscription or any subscription to
// a group is live (unsubscribing the outer alone stops new groups, not the
// running ones).
//
// A group subscribed after src was unsubscribed (the outer subscription and
// every group subscription having ended first) never notifies, as in
// Rx.NET; one subscribed after src ended gets that end at once.
//
// Bounds: at most GroupLimit groups (then an *OverflowError); once the
// outer subscription has ended, a value whose key has no group yet is
// dropped, opening none (nobody could see it). A group holds
// no values: it is a hot stream, and a value reaches the observers
// subscribed to its group at that moment, so subscribe inside OnNext of the
// Group to see its first value (a value for a group nobody observes is
// dropped, as in Rx.NET). Deliveries into a group are serialised as a
// Subject's (one OnNext delivers its own value plus at most 64 others').
// A panicking key function reaches the caller of the source's OnNext and
// loses that value only. A key holding a dynamic type == cannot compare (K
// an interface) fails the stream, and every group, with an
// *UncomparableError.
func GroupBy[T any, K comparable](src Observable[T], key func(T) K) Observable[Group[K, T]] {
	mustArg(key == nil, "GroupBy", "function key")
	if src == nil {
		return nilSource[Group[K, T]]("GroupBy", "src")
	}
	check := mayHoldUncomparable[K]()
	return observableFunc[Group[K, T]](func(down Observer[Group[K, T]]) Subscription {
		sc := ensureScope(down)
		g := &grouper[T, K]{down: direct(down), sc: sc, key: key, check: check, up: newScope(), groups: map[K]*pinnedSubject[T]{}}
		g.pin = newSourcePin(g.up)
		sc.onCancel(g.pin.release)
		subscribeIn[T](src, g, g.up)
		return sc
	})
}

// grouper observes the source; its calls are serialised by the source's
// grammar, so the map needs no lock.
type grouper[T any, K comparable] struct {
	down     Observer[Group[K, T]]
	sc       *scope
	key      func(T) K
	check    bool // K may hold keys == cannot compare: see mayHoldUncomparable
	up       *scope
	pin      *sourcePin
	groups   map[K]*pinnedSubject[T]
	order    []*pinnedSubject[T] // the groups in the order they opened
	finished bool
}

func (g *grouper[T, K]) OnNext(v T) {
	if g.finished {
		return
	}
	k := g.key(v)
	if g.up.cancelled() { // key unsubscribed everything
		return
	}
	if g.check {
		if err := uncomparable("GroupBy", "key", k); err != nil {
			g.OnError(err)
			return
		}
	}
	s, ok := g.groups[k]
	if !ok {
		if g.sc.cancelled() {
			// The outer subscription has ended: nobody can ever see this
			// group, and holding it would count towards GroupLimit and
			// fail the groups still observed.
			return
		}
		if len(g.groups) >= GroupLimit {
			g.OnError(&OverflowError{Op: "GroupBy", Limit: GroupLimit, What: "groups"})
			return
		}
		s = newPinnedSubject[T](g.pin, "GroupBy")
		g.groups[k] = s
		g.order = append(g.order, s)
		if !g.sc.cancelled() {
			g.down.OnNext(Group[K, T]{Key: k, Observable: s})
		}
		if g.up.cancelled() {
			return
		}
	}
	s.s.OnNext(v)
}

func (g *grouper[T, K]) OnError(err error) {
	if g.finished {
		return
	}
	g.finished = true
	groups := g.order
	g.groups, g.order = nil, nil
	defer g.up.cancel() // also when an observer panics
	endGroups(groups, func(s *Subject[T]) { s.OnError(err) })
	if !g.sc.cancelled() {
		g.down.OnError(err)
	}
}

func (g *grouper[T, K]) OnCompleted() {
	if g.finished {
		return
	}
	g.finished = true
	groups := g.order
	g.groups, g.order = nil, nil
	defer g.up.cancel()
	endGroups(groups, (*Subject[T]).OnCompleted)
	if !g.sc.cancelled() {
		g.down.OnCompleted()
	}
}

// endGroups ends every group with end. A panic out of one group's
// observer goes on once the groups after it have ended too: the others'
// subscribers are not left waiting for an end.
func endGroups[T any](groups []*pinnedSubject[T], end func(*Subject[T])) {
	i := 0
	defer func() {
		if i < len(groups) { // groups[i]'s observer panicked
			endGroups(groups[i+1:], end)
		}
	}()
	for ; i < len(groups); i++ {
		end(groups[i].s)
	}
}

func (g *grouper[T, K]) rxScope() *scope { return g.up }
