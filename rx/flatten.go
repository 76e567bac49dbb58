package rx

import (
	"sync"
	"sync/atomic"
)

// QueueLimit bounds the outer values that ConcatMap, ConcatAll and
// SelectManyLimit keep waiting for a free slot, the values Expand keeps
// waiting for f, and Delay's values waiting for their time. A producer on
// another goroutine that finds the queue full waits for room; a value that
// must not wait (one emitted re-entrantly, on a goroutine running the
// stage, or inside Subscribe, and an expanded value) ends the stream with
// an *OverflowError instead (see ConcatMap). Memory never grows without
// bound.
const QueueLimit = 1 << 16

// flattener subscribes the inner observables of an outer stream, at most
// limit at once (0: no limit), queueing the outer values that wait for a
// slot, and merges the inners' values into one serialised output. It is
// the engine of SelectManyLimit, ConcatMap and ConcatAll (limit 1) and
// Expand.
type flattener[T, U any] struct {
	out   serial[U]
	work  scope
	outer scope
	op    string
	f     func(T) Observable[U]
	limit int
	// echo and feed are Expand's (T and U are then one type): echo emits an
	// outer value, feed queues an inner value for expansion.
	echo func(T)
	feed func(U)
	// wip folds concurrent and re-entrant pump calls into the running one,
	// so a synchronous inner that completes inside its Subscribe starts the
	// next without growing the stack.
	wip atomic.Int32

	// The goroutines that must not wait for room (curg(), 0 for none): the
	// one inside Subscribe and the one running the pump. Those delivering
	// an inner's value are the live inners' (live).
	subscribing, pumping atomic.Uintptr

	mu        sync.Mutex
	queue     queue[T]
	room      room             // where producers wait for a value to leave a full queue
	live      *flatInner[T, U] // the live inners, linked through prev and next
	active    int
	outerDone bool
	done      bool
}

func flattenLimited[T, U any](src Observable[T], op string, f func(T) Observable[U], limit int, setup func(*flattener[T, U])) Observable[U] {
	return observableFunc[U](func(down Observer[U]) Subscription {
		sc := ensureScope(down)
		m := &flattener[T, U]{op: op, f: f, limit: limit}
		if setup != nil {
			setup(m)
		}
		sc.initChild(&m.work)
		m.out.initStage(down, sc, &m.work)
		m.work.initChild(&m.outer)
		m.subscribing.Store(curg())
		defer m.subscribing.Store(0)
		subscribeIn[T](src, (*flatOuter[T, U])(m), &m.outer)
		return sc
	})
}

// enqueue queues v for an inner and starts what can start, waiting for
// room as QueueLimit's doc says.
func (m *flattener[T, U]) enqueue(v T) {
	m.mu.Lock()
	for {
		if m.done {
			m.mu.Unlock()
			return
		}
		if m.queue.len() < QueueLimit {
			break
		}
		if !m.mayWait(curg()) {
			m.mu.Unlock()
			m.fail(&OverflowError{Op: m.op, Limit: QueueLimit, What: "values waiting for a free slot"})
			return
		}
		if !m.room.wait(&m.mu, m.work.doneChan()) {
			return
		}
	}
	m.queue.push(v)
	m.mu.Unlock()
	m.pump()
}

// mayWait reports whether the calling goroutine g may wait for room: not
// when it is inside Subscribe, running the pump or delivering an inner's
// value, where nothing else may make the room, nor when expanding (Expand's
// queue is its own work: only its pump empties it). m.mu is held.
func (m *flattener[T, U]) mayWait(g uintptr) bool {
	if m.feed != nil || g == m.subscribing.Load() || g == m.pumping.Load() {
		return false
	}
	for in := m.live; in != nil; in = in.next {
		if in.delivering.Load() == g {
			return false
		}
	}
	return true
}

func (m *flattener[T, U]) pump() {
	if m.wip.Add(1) != 1 {
		return
	}
	g := curg()
	m.pumping.Store(g)
	// A selector that panics loses its value and the panic goes on up to
	// the caller; what it leaves (queued values, or the ending once the
	// outer stream and every inner are done) is pumped on the way out, not
	// left to an event that may never come.
	finished := false
	defer func() {
		m.pumping.CompareAndSwap(g, 0) // a pump started since is not ours to clear
		if !finished {
			m.wip.Store(0)
			m.pump()
		}
	}()
	for {
		m.step()
		if m.wip.Add(-1) == 0 {
			finished = true
			return
		}
	}
}

// step starts inners while a slot is free and a value waits, and completes
// the stream when nothing is left.
func (m *flattener[T, U]) step() {
	for {
		if m.work.cancelled() {
			return
		}
		m.mu.Lock()
		if m.done {
			m.mu.Unlock()
			return
		}
		if m.queue.len() == 0 {
			end := m.outerDone && m.active == 0
			m.done = end
			m.mu.Unlock()
			if end {
				defer m.work.cancel() // also when the observer panics
				m.out.OnCompleted()
			}
			return
		}
		if m.limit > 0 && m.active >= m.limit {
			m.mu.Unlock()
			return
		}
		v := m.queue.pop()
		m.room.wake()
		m.mu.Unlock()
		inner := m.f(v)
		if m.work.cancelled() { // f unsubscribed
			return
		}
		if inner == nil {
			m.fail(errNilInner)
			return
		}
		m.subscribeInner(inner)
	}
}

// subscribeInner subscribes an inner counted in active. A panic out of its
// Subscribe (its observer's, say) ends it: it is released and no longer
// counted, and the pump's way out goes on with what is left.
func (m *flattener[T, U]) subscribeInner(inner Observable[U]) {
	in := &flatInner[T, U]{m: m}
	m.work.initChild(&in.sc)
	m.mu.Lock()
	m.active++
	if in.next = m.live; in.next != nil {
		in.next.prev = in
	}
	m.live = in
	m.mu.Unlock()
	subscribeInner[U](inner, in, &in.sc, in.over)
}

func (m *flattener[T, U]) fail(err error) {
	m.mu.Lock()
	m.done = true
	m.queue = queue[T]{}
	m.room.wake()
	m.mu.Unlock()
	defer m.work.cancel() // also when the observer panics
	m.out.OnError(err)
}

// flatOuter is the flattener as the outer stream's observer.
type flatOuter[T, U any] flattener[T, U]

func (o *flatOuter[T, U]) OnNext(v T) {
	m := (*flattener[T, U])(o)
	if m.echo != nil {
		m.echo(v)
	}
	m.enqueue(v)
}
func (o *flatOuter[T, U]) OnError(err error) { (*flattener[T, U])(o).fail(err) }
func (o *flatOuter[T, U]) OnCompleted() {
	m := (*flattener[T, U])(o)
	m.outer.cancel()
	m.mu.Lock()
	m.outerDone = true
	m.mu.Unlock()
	m.pump()
}
func (o *flatOuter[T, U]) rxScope() *scope { return &o.outer }

type flatInner[T, U any] struct {
	m  *flattener[T, U]
	sc scope
	// delivering is the goroutine that last delivered a value of this
	// inner (0 for none): the one inside its OnNext, if any (an inner's
	// calls never overlap), which must not wait for room. Left set after
	// the call, it costs no store per value when one goroutine delivers
	// them all; it then also keeps a goroutine feeding this live inner from
	// waiting for room only the inner's progress may make.
	delivering atomic.Uintptr
	prev, next *flatInner[T, U] // in m.live, guarded by m.mu
	ended      bool             // over has run; guarded by m.mu
}

func (i *flatInner[T, U]) OnNext(v U) {
	if g := curg(); i.delivering.Load() != g {
		i.delivering.Store(g)
	}
	i.m.out.OnNext(v)
	if i.m.feed != nil && !i.sc.cancelled() {
		i.m.feed(v)
	}
}
func (i *flatInner[T, U]) OnError(err error) { i.m.fail(err) }
func (i *flatInner[T, U]) OnCompleted() {
	i.sc.cancel()
	i.over()
	i.m.pump()
}

// over frees the inner's slot, once: it completed, or its Subscribe was
// torn by a panic (after completing, perhaps).
func (i *flatInner[T, U]) over() {
	m := i.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if i.ended {
		return
	}
	i.ended = true
	m.active--
	switch {
	case i.prev != nil:
		i.prev.next = i.next
	case m.live == i:
		m.live = i.next
	}
	if i.next != nil {
		i.next.prev = i.prev
	}
	i.prev, i.next = nil, nil
}
func (i *flatInner[T, U]) rxScope() *scope { return &i.sc }
