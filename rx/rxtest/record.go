package rxtest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meshrx/meshrx/rx"
)

// Kind is the kind of a recorded notification.
type Kind uint8

const (
	OnNext Kind = iota
	OnError
	OnCompleted
)

func (k Kind) String() string {
	switch k {
	case OnNext:
		return "OnNext"
	case OnError:
		return "OnError"
	default:
		return "OnCompleted"
	}
}

// Event is one recorded notification and the virtual time it arrived at
// (measured from the clock's start), like a marble in an Rx marble test.
type Event[T any] struct {
	At    time.Duration
	Kind  Kind
	Value T
	Err   error
}

func (e Event[T]) String() string {
	switch e.Kind {
	case OnNext:
		return fmt.Sprintf("OnNext(%v, %v)", e.At, e.Value)
	case OnError:
		return fmt.Sprintf("OnError(%v, %v)", e.At, e.Err)
	default:
		return fmt.Sprintf("OnCompleted(%v)", e.At)
	}
}

// Next is an expected value at a virtual time.
func Next[T any](at time.Duration, v T) Event[T] { return Event[T]{At: at, Kind: OnNext, Value: v} }

// Error is an expected error at a virtual time.
func Error[T any](at time.Duration, err error) Event[T] {
	return Event[T]{At: at, Kind: OnError, Err: err}
}

// Completed is an expected completion at a virtual time.
func Completed[T any](at time.Duration) Event[T] { return Event[T]{At: at, Kind: OnCompleted} }

// Recorder is an Observer that records what it receives with the virtual
// time of each notification, and checks the Rx grammar as it goes: a
// notification after a terminal one, or two calls at once, is a violation.
type Recorder[T any] struct {
	clk    *Clock
	sub    rx.Subscription
	inCall atomic.Bool

	mu         sync.Mutex
	events     []Event[T]
	violations []string
	done       chan struct{}
}

// NewRecorder returns a Recorder timing notifications on clk (nil: times are zero).
func NewRecorder[T any](clk *Clock) *Recorder[T] {
	return &Recorder[T]{clk: clk, done: make(chan struct{})}
}

// Record subscribes a new Recorder to src now.
func Record[T any](clk *Clock, src rx.Observable[T]) *Recorder[T] {
	r := NewRecorder[T](clk)
	sub := src.Subscribe(r)
	r.mu.Lock()
	r.sub = sub
	r.mu.Unlock()
	return r
}

func (r *Recorder[T]) now() time.Duration {
	if r.clk == nil {
		return 0
	}
	return r.clk.Elapsed()
}

func (r *Recorder[T]) record(e Event[T]) {
	if !r.inCall.CompareAndSwap(false, true) {
		r.mu.Lock()
		r.violations = append(r.violations, fmt.Sprintf("%v overlapped another call", e))
		r.mu.Unlock()
	} else {
		defer r.inCall.Store(false)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.events); n > 0 && r.events[n-1].Kind != OnNext {
		r.violations = append(r.violations, fmt.Sprintf("%v after %v", e, r.events[n-1]))
	}
	r.events = append(r.events, e)
	if e.Kind != OnNext {
		select {
		case <-r.done:
		default:
			close(r.done)
		}
	}
}

// OnNext records a value.
func (r *Recorder[T]) OnNext(v T) { r.record(Event[T]{At: r.now(), Kind: OnNext, Value: v}) }

// OnError records an error.
func (r *Recorder[T]) OnError(err error) { r.record(Event[T]{At: r.now(), Kind: OnError, Err: err}) }

// OnCompleted records the completion.
func (r *Recorder[T]) OnCompleted() { r.record(Event[T]{At: r.now(), Kind: OnCompleted}) }

// Events returns a copy of everything recorded so far.
func (r *Recorder[T]) Events() []Event[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event[T](nil), r.events...)
}

// Values returns the recorded values.
func (r *Recorder[T]) Values() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	var vs []T
	for _, e := range r.events {
		if e.Kind == OnNext {
			vs = append(vs, e.Value)
		}
	}
	return vs
}

// Err returns the recorded error, if any.
func (r *Recorder[T]) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Kind == OnError {
			return e.Err
		}
	}
	return nil
}

// Completed reports whether a completion was recorded.
func (r *Recorder[T]) Completed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Kind == OnCompleted {
			return true
		}
	}
	return false
}

// Terminated reports whether an error or a completion was recorded (also
// when a grammar violation was recorded before it).
func (r *Recorder[T]) Terminated() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// WaitTerminated waits, for at most bound of real time, until an error or a
// completion has been recorded, and reports whether one was. It is for
// sources that deliver on other goroutines (a plain *clock.Mock, a real
// clock); with a Clock, Advance already returns after the notifications.
func (r *Recorder[T]) WaitTerminated(bound time.Duration) bool {
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-r.done:
		return true
	case <-t.C:
		return false
	}
}

// Unsubscribe ends the recorded subscription.
func (r *Recorder[T]) Unsubscribe() {
	r.mu.Lock()
	sub := r.sub
	r.mu.Unlock()
	if sub != nil {
		sub.Unsubscribe()
	}
}

// GrammarErr returns the grammar violations seen so far, or nil.
func (r *Recorder[T]) GrammarErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.violations) == 0 {
		return nil
	}
	return fmt.Errorf("rxtest: grammar violated: %v", r.violations)
}

// CheckGrammar reports whether events follow OnNext* (OnError | OnCompleted)?.
func CheckGrammar[T any](events []Event[T]) error {
	for i, e := range events {
		if e.Kind != OnNext && i != len(events)-1 {
			return fmt.Errorf("rxtest: %v is followed by %v", e, events[i+1])
		}
		if i > 0 && e.At < events[i-1].At {
			return fmt.Errorf("rxtest: %v arrived before %v in time", e, events[i-1])
		}
	}
	return nil
}

// ErrTest is a recognisable error for tests.
var ErrTest = errors.New("rxtest: test error")
