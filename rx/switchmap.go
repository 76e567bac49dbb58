package rx

import (
	"sync"
	"sync/atomic"
)

// SwitchMap maps each value of src to an observable and mirrors the latest
// one: when src emits, the previous inner is unsubscribed and the new one
// subscribed (Rx.NET's Select+Switch, RxJS's switchMap). It completes when src
// and the latest inner have completed; any error ends the stream and
// unsubscribes everything. What an old inner emits after the switch is
// dropped; a value it was delivering as the switch happened may finish
// arriving, but never after a value of the new inner.
func SwitchMap[T, U any](src Observable[T], f func(T) Observable[U]) Observable[U] {
	mustArg(f == nil, "SwitchMap", "function f")
	if src == nil {
		return nilSource[U]("SwitchMap", "src")
	}
	return observableFunc[U](func(down Observer[U]) Subscription {
		sc := ensureScope(down)
		s := &switcher[T, U]{down: direct(down), sc: sc, work: sc.child(), f: f}
		s.mb.h = s
		outer := s.work.child()
		subscribeIn[T](src, &switchOuter[T, U]{s: s, sc: outer}, outer)
		return sc
	})
}

// switchNote is a notification for the output; id names the inner it came
// from, 0 the switcher itself.
type switchNote[U any] struct {
	note[U]
	id uint64
}

type switcher[T, U any] struct {
	down   Observer[U]
	sc     *scope
	work   *scope
	f      func(T) Observable[U]
	mb     mailbox[switchNote[U]]
	latest atomic.Uint64 // id of the current inner

	mu          sync.Mutex
	inner       *scope
	innerActive bool
	outerDone   bool

	finished bool // read and written by the mailbox handler only
}

func (s *switcher[T, U]) handle(n switchNote[U]) {
	if s.finished || s.sc.cancelled() || (n.id != 0 && n.id != s.latest.Load()) {
		return
	}
	switch n.kind {
	case kindNext:
		s.down.OnNext(n.v)
	case kindError:
		s.finished = true
		s.mb.close()
		s.work.cancel()
		s.down.OnError(n.err)
	default:
		s.finished = true
		s.mb.close()
		s.work.cancel()
		s.down.OnCompleted()
	}
}

func (s *switcher[T, U]) fail(err error) {
	s.mb.postEnd(switchNote[U]{note: note[U]{kind: kindError, err: err}})
}

func (s *switcher[T, U]) complete() {
	s.mb.postEnd(switchNote[U]{note: note[U]{kind: kindCompleted}})
}

type switchOuter[T, U any] struct {
	s  *switcher[T, U]
	sc *scope
}

func (o *switchOuter[T, U]) OnNext(v T) {
	s := o.s
	inner := s.f(v)
	if inner == nil {
		s.fail(errNilInner)
		return
	}
	s.mu.Lock()
	old := s.inner
	id := s.latest.Add(1)
	in := s.work.child()
	s.inner, s.innerActive = in, true
	s.mu.Unlock()
	if old != nil {
		old.cancel()
	}
	subscribeInner[U](inner, &switchInner[T, U]{s: s, id: id, sc: in}, in, func() {
		s.mu.Lock()
		if id == s.latest.Load() {
			s.innerActive, s.inner = false, nil
		}
		s.mu.Unlock()
	})
}

func (o *switchOuter[T, U]) OnError(err error) { o.s.fail(err) }

func (o *switchOuter[T, U]) OnCompleted() {
	o.sc.cancel()
	s := o.s
	s.mu.Lock()
	s.outerDone = true
	done := !s.innerActive
	s.mu.Unlock()
	if done {
		s.complete()
	}
}

func (o *switchOuter[T, U]) rxScope() *scope { return o.sc }

type switchInner[T, U any] struct {
	s  *switcher[T, U]
	id uint64
	sc *scope
}

func (i *switchInner[T, U]) OnNext(v U) {
	i.s.mb.post(switchNote[U]{note: note[U]{kind: kindNext, v: v}, id: i.id}, i.sc)
}

func (i *switchInner[T, U]) OnError(err error) {
	i.s.mb.postEnd(switchNote[U]{note: note[U]{kind: kindError, err: err}, id: i.id})
}

func (i *switchInner[T, U]) OnCompleted() {
	i.sc.cancel()
	s := i.s
	s.mu.Lock()
	current := i.id == s.latest.Load()
	if current {
		s.innerActive = false
		s.inner = nil
	}
	done := current && s.outerDone
	s.mu.Unlock()
	if done {
		s.complete()
	}
}

func (i *switchInner[T, U]) rxScope() *scope { return i.sc }
