package rx

import (
	"sync"
	"sync/atomic"
)

// mailboxCap bounds the values a mailbox holds for producers on other
// goroutines; mailboxBudget bounds how many of them one delivering call runs
// before it lets a waiting producer take over. One post therefore delivers
// its own value plus at most mailboxBudget+mailboxCap others'.
const (
	mailboxCap    = 32
	mailboxBudget = 32
)

// mailbox serialises calls to handle from any number of goroutines without
// holding a lock while handle runs, in bounded memory.
//
//   - The caller that finds it idle runs handle for its own value (one CAS
//     and no lock on this path), then for whatever was queued meanwhile.
//   - A caller on another goroutine that finds it busy queues its value when
//     fewer than mailboxCap wait, and otherwise waits for room (until done,
//     when the post carries a done channel, closes: its value is dropped). A
//     channel-fed source waiting here stops receiving, so its channel
//     carries the back-pressure.
//   - A call made from inside handle on the delivering goroutine (re-entrant)
//     is always queued behind the current one and never waits, so a handler
//     may post to its own mailbox without deadlocking.
//   - A delivering caller that has run mailboxBudget others' values makes
//     newcomers wait, finishes what is queued and leaves; a waiting producer
//     then takes over. One call thus delivers a bounded number of values.
//
// Operators built on it post values with post(e, sc), sc being the scope
// whose end makes the value pointless (a waiting producer is then released),
// and terminal notifications with postEnd (never waits). The handler calls
// close once it has delivered a terminal notification, which drops what is
// queued and releases waiting producers. serial wraps all of this for an
// Observer.
type mailbox[E any] struct {
	// owner is curg() of the goroutine running handle (0 when idle), with
	// bit 0 (queuedFlag) set by a producer that queued a value meanwhile, so
	// the owner's release — one CAS, as its taking — fails and it drains.
	owner atomic.Uintptr

	mu     sync.Mutex
	closed bool // the handler will take nothing more: posts are dropped
	// slow holds what only contention or re-entrancy needs (the queue and
	// the waiting producers), made the first time a value has to wait: an
	// uncontended mailbox, the common case per subscription, never makes it.
	// Guarded by mu.
	slow *mailboxQueue[E]

	// h handles each value. An interface rather than a func field: a
	// method value would cost an allocation per mailbox, that is, per
	// subscription of every operator that serialises.
	h mailboxHandler[E]
}

// mailboxHandler is the owner of a mailbox: the operator it serialises.
type mailboxHandler[E any] interface{ handle(E) }

// mailboxQueue is the part of a mailbox that holds values and producers
// waiting for the one delivering.
type mailboxQueue[E any] struct {
	q      []E
	spare  []E
	fullBy uintptr // a drainer that spent its budget: newcomers wait
	room   room    // where producers wait for room
}

// queue returns the mailbox's queue, making it on first use; m.mu is held.
func (m *mailbox[E]) queue() *mailboxQueue[E] {
	if m.slow == nil {
		m.slow = &mailboxQueue[E]{}
	}
	return m.slow
}

// post delivers e, or queues it, as described on mailbox. A producer waiting
// for room gives up (dropping e) when sc is cancelled; with a nil sc it waits
// for as long as the consumer takes.
func (m *mailbox[E]) post(e E, sc *scope) { m.postAs(e, sc, false) }

// postEnd is post for a notification that must not wait: a terminal one, of
// which each producer sends at most one, so the excess stays bounded.
func (m *mailbox[E]) postEnd(e E) { m.postAs(e, nil, true) }

// queuedFlag marks the owner word when a value was queued for the owner;
// curg() values are even.
const queuedFlag = 1

// delivering reports whether the calling goroutine g is running handle.
func (m *mailbox[E]) delivering(g uintptr) bool { return m.owner.Load()&^queuedFlag == g }

func (m *mailbox[E]) postAs(e E, sc *scope, end bool) {
	g := curg()
	if !m.take(g) {
		m.postSlow(e, g, sc, end)
		return
	}
	defer m.unwind(g)
	m.h.handle(e)
	m.leave(g)
}

// take makes g the owner of an idle mailbox (one compare-and-swap) and
// reports whether it did; the owner defers unwind, delivers its value and
// calls leave.
//
// Per value this fast path makes two locked instructions, the take and the
// release in leave: taking needs a read-modify-write (two producers must not
// both deliver), and a release must see whether a value was queued
// meanwhile, a store then a load in that order, which Go gives only as a
// locked instruction. Keeping ownership across calls instead (a biased
// mailbox, revoked with an asymmetric fence) was built and measured: in
// place the two cost about 1 ns of a Subject's 14, and the bias saved
// nothing (docs/performance.md, "What a Subject row is made of").
func (m *mailbox[E]) take(g uintptr) bool { return m.owner.CompareAndSwap(0, g) }

// leave gives the mailbox back once its owner g has delivered its value
// (one compare-and-swap), or first drains what was queued meanwhile.
func (m *mailbox[E]) leave(g uintptr) {
	if !m.owner.CompareAndSwap(g, 0) {
		m.run(g)
	}
}

// unwind, deferred by the owner g after take, releases the mailbox when the
// delivery did not end: a handler that panicked (an observer's OnNext, a
// user function below) must not leave the mailbox owned by a goroutine that
// has left it, or every later post would be queued for nobody and producers
// would wait for room forever. The panic goes on up to the caller; the
// mailbox is free for the next post (abandon). Whether the delivery ended is
// read from the owner word, with no flag kept per value: every return
// through leave has given the mailbox up (its release, or run's, succeeded;
// run's own deferred abandon covers a panic while it drains), so g still
// owning it here means leave was not reached.
func (m *mailbox[E]) unwind(g uintptr) {
	if m.owner.Load()&^queuedFlag == g {
		m.abandon(g)
	}
}

// idleQueued is the owner word of a mailbox whose owner left it by a panic
// while values were queued: nobody delivers, and the next post queues its
// value behind them and drains, keeping their order (the fast path, which
// takes only a mailbox whose word is 0, cannot overtake them).
const idleQueued = 2

// abandon releases the mailbox that g owned when a handler panicked: the
// budget it held and the producers waiting for room are released, and what
// is still queued is left for the next post.
func (m *mailbox[E]) abandon(g uintptr) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mq := m.slow
	if mq == nil {
		m.owner.Store(0)
		return
	}
	if mq.fullBy == g {
		mq.fullBy = 0
	}
	m.wake()
	if len(mq.q) > 0 && !m.closed {
		m.owner.Store(idleQueued)
	} else {
		m.owner.Store(0)
	}
}

func (m *mailbox[E]) postSlow(e E, g uintptr, sc *scope, end bool) {
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return
		}
		mq := m.queue()
		if end || m.delivering(g) || (len(mq.q) < mailboxCap && mq.fullBy == 0) {
			break
		}
		if !mq.room.wait(&m.mu, sc.doneChan()) {
			return
		}
	}
	mq := m.queue()
	mq.q = append(mq.q, e)
	m.mu.Unlock()
	// Hand the value to the owner (flag it), or become the owner.
	for {
		o := m.owner.Load()
		if o == 0 || o == idleQueued {
			if m.owner.CompareAndSwap(o, g) {
				m.run(g)
				return
			}
			continue
		}
		if o&queuedFlag != 0 || m.owner.CompareAndSwap(o, o|queuedFlag) {
			return
		}
	}
}

// run drains the queue as its owner g, then gives the mailbox up (also when
// a handler panics: see unwind).
func (m *mailbox[E]) run(g uintptr) {
	delivered, spent := 0, false
	finished := false
	defer func() {
		if !finished {
			m.abandon(g)
		}
	}()
	for {
		// Clear the flag before draining: a value flagged after this is
		// either taken by the drain or makes the release fail.
		m.owner.Store(g)
		delivered += m.drain(g, delivered, &spent)
		if m.owner.CompareAndSwap(g, 0) {
			break
		}
	}
	finished = true
	if spent {
		m.mu.Lock()
		if mq := m.slow; mq != nil && mq.fullBy == g {
			mq.fullBy = 0
			m.wake()
		}
		m.mu.Unlock()
	}
}

// drain delivers queued values until none is left and returns how many.
func (m *mailbox[E]) drain(g uintptr, delivered int, spent *bool) int {
	n := 0
	var batch []E
	for {
		m.mu.Lock()
		mq := m.slow
		if mq == nil {
			m.mu.Unlock()
			return n
		}
		if batch != nil && mq.spare == nil {
			mq.spare = batch[:0]
		}
		if len(mq.q) == 0 {
			m.mu.Unlock()
			return n
		}
		batch = mq.q
		mq.q, mq.spare = mq.spare, nil
		n += len(batch)
		if delivered+n >= mailboxBudget && !*spent {
			*spent = true
			mq.fullBy = g
		}
		m.wake()
		m.mu.Unlock()
		m.handleBatch(batch)
	}
}

// handleBatch handles the values of batch in order. If the handler panics,
// the values after the one it panicked on go back to the head of the queue,
// for the next owner: other producers' values are not lost to one
// observer's panic.
func (m *mailbox[E]) handleBatch(batch []E) {
	i := 0
	defer func() {
		if i < len(batch) {
			m.requeue(batch[i+1:])
		}
	}()
	var zero E
	for ; i < len(batch); i++ {
		m.h.handle(batch[i])
		batch[i] = zero
	}
}

// requeue puts rest back at the head of the queue.
func (m *mailbox[E]) requeue(rest []E) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || len(rest) == 0 {
		return
	}
	mq := m.queue()
	q := make([]E, 0, len(rest)+len(mq.q))
	q = append(q, rest...)
	mq.q = append(q, mq.q...)
}

// wake lets waiting producers look again; m.mu is held.
func (m *mailbox[E]) wake() {
	if mq := m.slow; mq != nil {
		mq.room.wake()
	}
}

// close drops whatever is queued and every later post, and releases the
// producers waiting for room. The handler calls it once it will take nothing
// more (a terminal notification went down).
func (m *mailbox[E]) close() {
	m.mu.Lock()
	m.closed = true
	if mq := m.slow; mq != nil {
		clear(mq.q)
		mq.q = mq.q[:0]
	}
	m.wake()
	m.mu.Unlock()
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
	down Observer[T]
	sc   *scope
	// stage is the scope whose end releases a producer waiting for room:
	// sc, or the operator's own work scope when the operator can end
	// before its downstream does (a merge that fails ends its inners from
	// inside a delivery; a producer waiting for room must not outlive that).
	stage    *scope
	mb       mailbox[note[T]]
	finished bool // read and written by the mailbox handler only
	stopped  atomic.Bool
}

func (s *serial[T]) init(down Observer[T], sc *scope) {
	s.down, s.sc, s.stage = direct(down), sc, sc
	s.mb.h = s
}

// initStage is init for an operator whose work ends with stage (a child of
// sc), which then releases producers waiting for room.
func (s *serial[T]) initStage(down Observer[T], sc, stage *scope) {
	s.init(down, sc)
	s.stage = stage
}

func (s *serial[T]) handle(n note[T]) { s.deliver(n) }

func (s *serial[T]) deliver(n note[T]) {
	if s.finished || s.sc.cancelled() {
		return
	}
	switch n.kind {
	case kindNext:
		s.down.OnNext(n.v)
	case kindError:
		s.finished = true
		s.mb.close()
		s.down.OnError(n.err)
	default:
		s.finished = true
		s.mb.close()
		s.down.OnCompleted()
	}
}

func (s *serial[T]) OnNext(v T) {
	if s.stopped.Load() {
		return
	}
	s.mb.post(note[T]{kind: kindNext, v: v}, s.stage)
}

func (s *serial[T]) OnError(err error) {
	if s.stopped.Swap(true) {
		return
	}
	if err == nil {
		err = ErrNilError
	}
	s.mb.postEnd(note[T]{kind: kindError, err: err})
}

func (s *serial[T]) OnCompleted() {
	if s.stopped.Swap(true) {
		return
	}
	s.mb.postEnd(note[T]{kind: kindCompleted})
}

func (s *serial[T]) rxScope() *scope { return s.sc }
