package rx

import (
	"sync"
	"sync/atomic"
)

// QueueLimit bounds the sources that SelectManyLimit, ConcatAll and Expand
// keep waiting for a free slot: an outer value (or an expanded one) that
// would make the queue longer ends the stream with an *OverflowError rather
// than growing memory without bound. It bounds ConcatMap's outer values
// waiting for their inner, and Delay's values waiting for their time, too,
// where a producer on another goroutine waits for room instead (see
// ConcatMap and Delay).
const QueueLimit = 1 << 16

// flattener subscribes the inner observables of an outer stream, at most
// limit at once (0: no limit), queueing the outer values that wait for a
// slot, and merges the inners' values into one serialised output. It is
// the engine of SelectManyLimit, ConcatAll (limit 1) and Expand.
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

	mu        sync.Mutex
	queue     queue[T]
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
		subscribeIn[T](src, (*flatOuter[T, U])(m), &m.outer)
		return sc
	})
}

// enqueue queues v for an inner and starts what can start.
func (m *flattener[T, U]) enqueue(v T) {
	m.mu.Lock()
	if m.done {
		m.mu.Unlock()
		return
	}
	if m.queue.len() >= QueueLimit {
		m.mu.Unlock()
		m.fail(&OverflowError{Op: m.op, Limit: QueueLimit, What: "sources waiting for a free slot"})
		return
	}
	m.queue.push(v)
	m.mu.Unlock()
	m.pump()
}

func (m *flattener[T, U]) pump() {
	if m.wip.Add(1) != 1 {
		return
	}
	// A selector that panics loses its value and the panic goes on up to
	// the caller; what it leaves (queued values, or the ending once the
	// outer stream and every inner are done) is pumped on the way out, not
	// left to an event that may never come.
	finished := false
	defer func() {
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
		m.mu.Unlock()
		inner := m.f(v)
		if m.work.cancelled() { // f unsubscribed
			return
		}
		if inner == nil {
			m.fail(errNilInner)
			return
		}
		m.mu.Lock()
		m.active++
		m.mu.Unlock()
		m.subscribeInner(inner)
	}
}

// subscribeInner subscribes an inner counted in active. A panic out of its
// Subscribe (its observer's, say) ends it: it is released and no longer
// counted, and the pump's way out goes on with what is left.
func (m *flattener[T, U]) subscribeInner(inner Observable[U]) {
	in := &flatInner[T, U]{m: m}
	m.work.initChild(&in.sc)
	subscribeInner[U](inner, in, &in.sc, func() {
		m.mu.Lock()
		m.active--
		m.mu.Unlock()
	})
}

func (m *flattener[T, U]) fail(err error) {
	m.mu.Lock()
	m.done = true
	m.queue = queue[T]{}
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
}

func (i *flatInner[T, U]) OnNext(v U) {
	i.m.out.OnNext(v)
	if i.m.feed != nil && !i.sc.cancelled() {
		i.m.feed(v)
	}
}
func (i *flatInner[T, U]) OnError(err error) { i.m.fail(err) }
func (i *flatInner[T, U]) OnCompleted() {
	i.sc.cancel()
	i.m.mu.Lock()
	i.m.active--
	i.m.mu.Unlock()
	i.m.pump()
}
func (i *flatInner[T, U]) rxScope() *scope { return &i.sc }
