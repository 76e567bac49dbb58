package rxtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/meshrx/meshrx/rx"
)

// Span is the virtual time span of one subscription to a test observable:
// from Subscribe to the unsubscription or the terminal notification.
// Unsubscribed is -1 while the subscription is open.
type Span struct {
	Subscribed, Unsubscribed time.Duration
}

// Open is the Unsubscribed value of a subscription still open.
const Open time.Duration = -1

// Sub is an expected subscription span.
func Sub(subscribed, unsubscribed time.Duration) Span { return Span{subscribed, unsubscribed} }

// TestObservable is a scripted source on a Clock that logs its subscriptions,
// as Rx.NET's test observables do.
type TestObservable[T any] struct {
	clk       *Clock
	hot       bool
	events    []Event[T]
	scriptErr error

	mu    sync.Mutex
	spans []Span
	obs   []*hotObserver[T] // Hot: the current subscribers, in subscription order
	ended bool              // Hot: a terminal event has happened
}

type hotObserver[T any] struct {
	o    rx.Observer[T]
	gone bool // unsubscribed; guarded by the observable's mu
}

// Hot returns a source whose events happen at their absolute virtual times
// whether or not anyone is subscribed; subscribers see what happens while
// they are, in the order they subscribed (as Rx.NET's hot test observable
// notifies them). The events are scheduled now. As in Rx.NET, a subscriber that
// arrives after a terminal event sees nothing (the ending is not replayed).
// An event scripted after a terminal event is reported by ScriptErr.
func Hot[T any](clk *Clock, events ...Event[T]) *TestObservable[T] {
	h := &TestObservable[T]{clk: clk, hot: true, events: events, scriptErr: checkScript(events)}
	for _, e := range events {
		if e.At < clk.Elapsed() {
			continue
		}
		e := e
		clk.Schedule(e.At-clk.Elapsed(), func() { h.emitHot(e) })
	}
	return h
}

// Cold returns a source that replays its events for each subscriber at
// times relative to that subscription. Events scripted after a terminal
// event are reported by ScriptErr.
func Cold[T any](clk *Clock, events ...Event[T]) *TestObservable[T] {
	return &TestObservable[T]{clk: clk, events: events, scriptErr: checkScript(events)}
}

// ScriptErr reports a script that breaks the grammar: an event at or after
// a terminal event's time (which a subscriber would not see from a Cold
// source, and would see as a violation from a Hot one).
func (s *TestObservable[T]) ScriptErr() error { return s.scriptErr }

func checkScript[T any](events []Event[T]) error {
	for i, e := range events {
		if e.Kind == OnNext {
			continue
		}
		for _, later := range events[i+1:] {
			if later.At >= e.At {
				return fmt.Errorf("rxtest: %v is scripted after the terminal %v", later, e)
			}
		}
	}
	return nil
}

func (s *TestObservable[T]) emitHot(e Event[T]) {
	s.mu.Lock()
	if e.Kind != OnNext {
		s.ended = true
	}
	obs := append([]*hotObserver[T](nil), s.obs...)
	s.mu.Unlock()
	for _, o := range obs {
		s.mu.Lock()
		live := !o.gone
		s.mu.Unlock()
		if live {
			emit(o.o, e)
		}
	}
}

func emit[T any](o rx.Observer[T], e Event[T]) {
	switch e.Kind {
	case OnNext:
		o.OnNext(e.Value)
	case OnError:
		o.OnError(e.Err)
	default:
		o.OnCompleted()
	}
}

// Subscriptions returns the subscription spans so far.
func (s *TestObservable[T]) Subscriptions() []Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Span(nil), s.spans...)
}

func (s *TestObservable[T]) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spans = append(s.spans, Span{Subscribed: s.clk.Elapsed(), Unsubscribed: Open})
	return len(s.spans) - 1
}

func (s *TestObservable[T]) close(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spans[i].Unsubscribed == Open {
		s.spans[i].Unsubscribed = s.clk.Elapsed()
	}
}

// Subscribe implements rx.Observable.
func (s *TestObservable[T]) Subscribe(o rx.Observer[T]) rx.Subscription {
	i := s.open()
	src := s.source()
	logged := rx.Finally(src, func() { s.close(i) })
	return logged.Subscribe(o)
}

// hotSource subscribes to a Hot observable's events from now on.
type hotSource[T any] struct{ s *TestObservable[T] }

func (h hotSource[T]) Subscribe(o rx.Observer[T]) rx.Subscription {
	s := h.s
	ho := &hotObserver[T]{o: o}
	s.mu.Lock()
	if !s.ended {
		s.obs = append(s.obs, ho)
	}
	s.mu.Unlock()
	return hotSubscription[T]{s: s, o: ho}
}

type hotSubscription[T any] struct {
	s *TestObservable[T]
	o *hotObserver[T]
}

func (h hotSubscription[T]) Unsubscribe() {
	h.s.mu.Lock()
	h.o.gone = true
	h.s.obs = slices.DeleteFunc(h.s.obs, func(o *hotObserver[T]) bool { return o == h.o })
	h.s.mu.Unlock()
}

func (s *TestObservable[T]) source() rx.Observable[T] {
	if s.hot {
		return hotSource[T]{s}
	}
	return rx.Defer(func() rx.Observable[T] {
		// The events are scheduled on the subscribing goroutine and stopped
		// on whichever goroutine ends the subscription (an Advance on
		// another one, say): the list is shared under a lock.
		var mu sync.Mutex
		var stops []func() bool
		scripted := rx.Create(func(ctx context.Context, o rx.Observer[T]) {
			for _, e := range s.events {
				stop := s.clk.Schedule(e.At, func() {
					if ctx.Err() == nil {
						emit(o, e)
					}
				})
				mu.Lock()
				stops = append(stops, stop)
				mu.Unlock()
			}
		})
		return rx.Finally(scripted, func() {
			mu.Lock()
			defer mu.Unlock()
			for _, stop := range stops {
				stop()
			}
		})
	})
}

// Start runs the Rx.NET test harness shape on clk: it calls create and
// subscribes a Recorder at subscribeAt, unsubscribes at disposeAt, and
// advances the clock to disposeAt. Times are measured from the clock's start.
func Start[T any](clk *Clock, subscribeAt, disposeAt time.Duration, create func() rx.Observable[T]) *Recorder[T] {
	r := NewRecorder[T](clk)
	clk.Schedule(subscribeAt-clk.Elapsed(), func() {
		sub := create().Subscribe(r)
		r.mu.Lock()
		r.sub = sub
		r.mu.Unlock()
	})
	clk.Schedule(disposeAt-clk.Elapsed(), r.Unsubscribe)
	clk.AdvanceTo(disposeAt)
	return r
}
