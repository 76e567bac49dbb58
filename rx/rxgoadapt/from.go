package rxgoadapt

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/meshrx/meshrx/rx"
	"github.com/reactivex/rxgo/v2"
)

// ErrNilObservable is the error of a stream adapted from a nil observable.
var ErrNilObservable = errors.New("rxgoadapt: nil observable")

// TypeError ends a FromRxGoOf stream at the first item whose value is not of
// the requested type.
type TypeError struct {
	Want  string // the requested type, e.g. "int"
	Got   string // the item's dynamic type, "<nil>" for a nil value
	Index int    // position of the item among the values, from 0
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("rxgoadapt: item %d is a %s, want %s", e.Index, e.Got, e.Want)
}

// FromRxGo reads src as an rx stream of its items' values. Every Subscribe
// observes src anew under a context that is cancelled when the subscription
// ends (unsubscribed, completed or failed). The first error item ends the
// stream with that error, unchanged.
func FromRxGo(src rxgo.Observable, opts ...Option) rx.Observable[any] {
	return fromRxGo(src, func(v any, _ int) (any, error) { return v, nil }, opts)
}

// FromRxGoOf is FromRxGo for items of type T: an item whose value is not a T
// ends the stream with a *TypeError. A nil value is a T only when T is an
// interface type (it becomes T's nil).
func FromRxGoOf[T any](src rxgo.Observable, opts ...Option) rx.Observable[T] {
	want := reflect.TypeFor[T]()
	nilable := want.Kind() == reflect.Interface
	return fromRxGo(src, func(v any, i int) (T, error) {
		t, ok := v.(T)
		if !ok && (v != nil || !nilable) {
			return t, &TypeError{Want: want.String(), Got: fmt.Sprintf("%T", v), Index: i}
		}
		return t, nil
	}, opts)
}

func fromRxGo[T any](src rxgo.Observable, conv func(any, int) (T, error), opts []Option) rx.Observable[T] {
	if src == nil {
		return rx.Throw[T](ErrNilObservable)
	}
	return &fromObservable[T]{src: src, conv: conv, cfg: newConfig(opts)}
}

type fromObservable[T any] struct {
	src  rxgo.Observable
	conv func(any, int) (T, error)
	cfg  config
}

func (f *fromObservable[T]) Subscribe(o rx.Observer[T]) rx.Subscription {
	ctx, cancel := context.WithCancel(context.Background())
	s := &fromSubscription{cancel: cancel, drain: newDrainer(f.cfg)}
	items := f.src.Observe(rxgo.WithContext(ctx))
	go pump(ctx, s, items, o, f.conv)
	return s
}

// fromSubscription is one subscription to an rxgo observable. Whoever ends
// it first (Unsubscribe, or the pump on a terminal item) cancels the rxgo
// context and starts the drain budget.
type fromSubscription struct {
	ended  atomic.Bool
	cancel context.CancelFunc
	drain  *drainer
}

// Unsubscribe stops the rxgo side; it never blocks.
func (s *fromSubscription) Unsubscribe() { s.end(true) }

// end reports whether this call ended the subscription. drain says whether
// rxgo may still send: false when its channel is known to be closed.
func (s *fromSubscription) end(drain bool) bool {
	if !s.ended.CompareAndSwap(false, true) {
		return false
	}
	s.cancel()
	if drain {
		s.drain.arm()
	}
	return true
}

// pump is the one goroutine that delivers to o, so calls into o never
// overlap; nothing is delivered once the subscription has ended.
func pump[T any](ctx context.Context, s *fromSubscription, items <-chan rxgo.Item, o rx.Observer[T], conv func(any, int) (T, error)) {
	defer s.drain.run(items)
	for i := 0; ; {
		select {
		case <-ctx.Done():
			return
		case it, ok := <-items:
			switch {
			case s.ended.Load():
				return
			case !ok:
				if s.end(false) {
					o.OnCompleted()
				}
				return
			case it.E != nil:
				if s.end(true) {
					o.OnError(it.E)
				}
				return
			}
			v, err := conv(it.V, i)
			if err != nil {
				if s.end(true) {
					o.OnError(err)
				}
				return
			}
			i++
			o.OnNext(v)
		}
	}
}
