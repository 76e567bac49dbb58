package rxtest

import (
	"context"
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
	clk    *Clock
	hot    bool
	events []Event[T]
	subj   *rx.Subject[T]

	mu    sync.Mutex
	spans []Span
}

// Hot returns a source whose events happen at their absolute virtual times
// whether or not anyone is subscribed; subscribers see what happens while
// they are. The events are scheduled now.
func Hot[T any](clk *Clock, events ...Event[T]) *TestObservable[T] {
	h := &TestObservable[T]{clk: clk, hot: true, events: events, subj: rx.NewSubject[T]()}
	for _, e := range events {
		if e.At < clk.Elapsed() {
			continue
		}
		e := e
		clk.Schedule(e.At-clk.Elapsed(), func() { emit(h.subj, e) })
	}
	return h
}

// Cold returns a source that replays its events for each subscriber at
// times relative to that subscription.
func Cold[T any](clk *Clock, events ...Event[T]) *TestObservable[T] {
	return &TestObservable[T]{clk: clk, events: events}
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

func (s *TestObservable[T]) source() rx.Observable[T] {
	if s.hot {
		return s.subj
	}
	return rx.Defer(func() rx.Observable[T] {
		var stops []func() bool
		scripted := rx.Create(func(ctx context.Context, o rx.Observer[T]) {
			for _, e := range s.events {
				stops = append(stops, s.clk.Schedule(e.At, func() {
					if ctx.Err() == nil {
						emit(o, e)
					}
				}))
			}
		})
		return rx.Finally(scripted, func() {
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
