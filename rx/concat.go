package rx

import (
	"sync"
	"sync/atomic"
)

// Concat subscribes to each source in turn, the next when the previous has
// completed. Synchronous sources do not grow the stack.
func Concat[T any](srcs ...Observable[T]) Observable[T] {
	if i := nilAt(srcs); i >= 0 {
		return nilSource[T]("Concat", indexArg("srcs", i))
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		c := &concatSink[T]{down: direct(down), sc: sc, srcs: srcs}
		c.next()
		return sc
	})
}

// concatSink runs srcs one after the other: Concat's, and with resume set
// OnErrorResumeNext's (an error, or a nil source, moves on to the next).
type concatSink[T any] struct {
	down   Observer[T]
	sc     *scope
	srcs   []Observable[T]
	resume bool
	i      int
	wip    atomic.Int32
}

func (c *concatSink[T]) next() {
	if c.wip.Add(1) != 1 {
		return
	}
	for {
		if c.sc.cancelled() {
			return
		}
		if c.i == len(c.srcs) {
			c.down.OnCompleted()
			return
		}
		src := c.srcs[c.i]
		c.i++
		in := &concatInner[T]{c: c}
		c.sc.initChild(&in.sc)
		if src == nil && c.resume {
			in.OnCompleted()
		} else {
			subscribeIn[T](src, in, &in.sc)
		}
		if c.wip.Add(-1) == 0 {
			return
		}
	}
}

type concatInner[T any] struct {
	c  *concatSink[T]
	sc scope
}

func (i *concatInner[T]) OnNext(v T) { i.c.down.OnNext(v) }
func (i *concatInner[T]) OnError(err error) {
	i.sc.cancel()
	if i.c.resume {
		i.c.next()
		return
	}
	i.c.down.OnError(err)
}
func (i *concatInner[T]) OnCompleted() {
	i.sc.cancel()
	i.c.next()
}
func (i *concatInner[T]) rxScope() *scope { return &i.sc }

// ConcatMap maps each value to an observable and concatenates them: the inner
// for a value is subscribed when the previous inner has completed; values
// arriving meanwhile wait in order, at most QueueLimit of them. A producer
// on another goroutine that finds QueueLimit values waiting waits for room
// (until the subscription ends, which drops its value and returns), so an
// outer stream faster than its inners is slowed to their pace and loses
// nothing. A value that must not wait fails the stream with an
// *OverflowError instead, as ConcatAll's does: one that arrives on a
// goroutine running this stage (from inside an inner's delivery or the
// selector, re-entrantly: waiting there would wait for itself), or from a
// source emitting inside Subscribe (a synchronous outer longer than
// QueueLimit whose inners do not complete at once). A producer that also
// drives the inners to completion (a test pushing into a hot source, then
// advancing the inners' virtual clock) must not push more than QueueLimit
// values in between: it would wait for itself.
func ConcatMap[T, U any](src Observable[T], f func(T) Observable[U]) Observable[U] {
	mustArg(f == nil, "ConcatMap", "function f")
	if src == nil {
		return nilSource[U]("ConcatMap", "src")
	}
	return observableFunc[U](func(down Observer[U]) Subscription {
		sc := ensureScope(down)
		c := &concatMapper[T, U]{f: f, work: sc.child()}
		c.out.initStage(down, sc, c.work)
		outer := c.work.child()
		c.subscribing.Store(curg())
		defer c.subscribing.Store(0)
		subscribeIn[T](src, &concatMapOuter[T, U]{c: c, sc: outer}, outer)
		return sc
	})
}

type concatMapper[T, U any] struct {
	out  serial[U]
	f    func(T) Observable[U]
	work *scope
	wip  atomic.Int64

	// The goroutines that must not wait for room (curg(), 0 for none):
	// the one inside Subscribe, the one running the pump, and the one
	// delivering an inner's value (an inner's calls never overlap).
	subscribing, pumping, delivering atomic.Uintptr

	mu        sync.Mutex
	queue     queue[T]
	room      room // where producers wait for a value to leave a full queue
	active    bool
	outerDone bool
	done      bool
}

// pump starts the next inner when none is running; concurrent and re-entrant
// calls are folded into the running pump's loop.
func (c *concatMapper[T, U]) pump() {
	if c.wip.Add(1) != 1 {
		return
	}
	g := curg()
	c.pumping.Store(g)
	// A selector that panics loses its value and the panic goes on up to
	// the caller; what it leaves (queued values, or the ending) is pumped
	// on the way out, as the flattener's pump does.
	finished := false
	defer func() {
		c.pumping.CompareAndSwap(g, 0) // a pump started since is not ours to clear
		if !finished {
			c.wip.Store(0)
			c.pump()
		}
	}()
	for {
		c.step()
		if c.wip.Add(-1) == 0 {
			finished = true
			return
		}
	}
}

func (c *concatMapper[T, U]) step() {
	c.mu.Lock()
	if c.active || c.done {
		c.mu.Unlock()
		return
	}
	if c.queue.len() == 0 {
		if c.outerDone {
			c.done = true
			c.mu.Unlock()
			defer c.work.cancel() // also when the observer panics
			c.out.OnCompleted()
			return
		}
		c.mu.Unlock()
		return
	}
	v := c.queue.pop()
	c.active = true
	c.wake()
	c.mu.Unlock()
	returned := false
	defer func() {
		if !returned { // f panicked: no inner runs for its value
			c.mu.Lock()
			c.active = false
			c.mu.Unlock()
		}
	}()
	inner := c.f(v)
	returned = true
	if inner == nil {
		c.fail(errNilInner)
		return
	}
	in := c.work.child()
	subscribeInner[U](inner, &concatMapInner[T, U]{c: c, sc: in}, in, func() {
		c.mu.Lock()
		c.active = false
		c.mu.Unlock()
	})
}

// wake lets the producers waiting for room look again; c.mu is held.
func (c *concatMapper[T, U]) wake() { c.room.wake() }

// mayWait reports whether the calling goroutine g may wait for room: not
// when it is inside Subscribe, running the pump or delivering an inner's
// value, where nothing else would make the room.
func (c *concatMapper[T, U]) mayWait(g uintptr) bool {
	return g != c.subscribing.Load() && g != c.pumping.Load() && g != c.delivering.Load()
}

// enqueue queues v for its inner, waiting for room as ConcatMap's doc says.
func (c *concatMapper[T, U]) enqueue(v T) {
	c.mu.Lock()
	for {
		if c.done {
			c.mu.Unlock()
			return
		}
		if c.queue.len() < QueueLimit {
			break
		}
		if !c.mayWait(curg()) {
			c.mu.Unlock()
			c.fail(&OverflowError{Op: "ConcatMap", Limit: QueueLimit, What: "values waiting for their inner"})
			return
		}
		if !c.room.wait(&c.mu, c.work.doneChan()) {
			return
		}
	}
	c.queue.push(v)
	c.mu.Unlock()
	c.pump()
}

func (c *concatMapper[T, U]) fail(err error) {
	c.mu.Lock()
	c.done = true
	c.queue = queue[T]{}
	c.wake()
	c.mu.Unlock()
	defer c.work.cancel() // also when the observer panics
	c.out.OnError(err)
}

type concatMapOuter[T, U any] struct {
	c  *concatMapper[T, U]
	sc *scope
}

func (o *concatMapOuter[T, U]) OnNext(v T)        { o.c.enqueue(v) }
func (o *concatMapOuter[T, U]) OnError(err error) { o.c.fail(err) }
func (o *concatMapOuter[T, U]) OnCompleted() {
	o.sc.cancel()
	o.c.mu.Lock()
	o.c.outerDone = true
	o.c.mu.Unlock()
	o.c.pump()
}
func (o *concatMapOuter[T, U]) rxScope() *scope { return o.sc }

type concatMapInner[T, U any] struct {
	c  *concatMapper[T, U]
	sc *scope
}

func (i *concatMapInner[T, U]) OnNext(v U) {
	prev := i.c.delivering.Swap(curg())
	defer i.c.delivering.Store(prev)
	i.c.out.OnNext(v)
}
func (i *concatMapInner[T, U]) OnError(err error) { i.c.fail(err) }
func (i *concatMapInner[T, U]) OnCompleted() {
	i.sc.cancel()
	i.c.mu.Lock()
	i.c.active = false
	i.c.mu.Unlock()
	i.c.pump()
}
func (i *concatMapInner[T, U]) rxScope() *scope { return i.sc }
