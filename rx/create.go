package rx

import (
	"context"
	"errors"
	"math"
)

// Return emits v and completes, synchronously inside Subscribe.
func Return[T any](v T) Observable[T] { return returnObservable[T]{v} }

// returnObservable is a struct rather than a closure: for small or
// pointer-shaped values it fits an interface without an allocation.
type returnObservable[T any] struct{ v T }

func (r returnObservable[T]) Subscribe(o Observer[T]) Subscription {
	mustObserver(o, "Return")
	sc := scopeOf(o)
	if sc.cancelled() {
		return noSubscription{}
	}
	// Not fused: for one value, building the fused form of the chain below
	// (two allocations) costs more than the OnNext calls it would save.
	direct(o).OnNext(r.v)
	if !sc.cancelled() {
		o.OnCompleted()
	}
	return noSubscription{}
}

func (returnObservable[T]) rxNative() {}

// Of emits each value in order and completes, synchronously inside Subscribe.
// It stops as soon as the chain below it unsubscribes.
func Of[T any](vs ...T) Observable[T] {
	return observableFunc[T](func(o Observer[T]) Subscription {
		sc := scopeOf(o)
		if next := fuseSync(o); next != nil {
			// The stages below run inside this loop (see fuse.go).
			if !next.run(vs, sc) {
				return noSubscription{}
			}
		} else {
			d := direct(o)
			for _, v := range vs {
				if sc.cancelled() {
					return noSubscription{}
				}
				d.OnNext(v)
			}
		}
		if !sc.cancelled() {
			o.OnCompleted()
		}
		return noSubscription{}
	})
}

// Range emits count consecutive integers starting at start, synchronously.
// A count <= 0 (math.MinInt included) completes without emitting. It stops
// as soon as the chain below it unsubscribes. A range that would pass the
// largest int fails with a *RangeError (without emitting), never wrapping
// around.
func Range(start, count int) Observable[int] {
	if count <= 0 {
		// Decided here, before any start+count: with a count near
		// math.MinInt that sum wraps to a large end and the loop below
		// would never stop.
		return Empty[int]()
	}
	if start > math.MaxInt-(count-1) {
		return Throw[int](&RangeError{Start: start, Count: count})
	}
	if start+count < start {
		// The last value is math.MaxInt itself: end would wrap.
		return Concat(Range(start, count-1), Return(math.MaxInt))
	}
	return observableFunc[int](func(o Observer[int]) Subscription {
		sc := scopeOf(o)
		end := start + count
		// The loops are spelled out per case: each value costs one call, to
		// the fused stages below (see fuse.go) or through the interface, and
		// one load of the scope only when something below can unsubscribe.
		switch next := fuseSync(o); {
		case next != nil && next.loop != nil:
			// In chunks, so that the first stages run inside the chain's
			// own loop; an int costs nothing to make ahead of its turn.
			var chunk [64]int
			for v := start; v < end; {
				n := min(end-v, len(chunk))
				for i := range n {
					chunk[i] = v + i
				}
				if !next.loop(chunk[:n], sc) {
					return noSubscription{}
				}
				v += n
			}
		case next != nil && sc == nil:
			// fuseSync's loop form (allLoop) has a nil step: safe here only
			// because a non-nil loop is taken by the case above, checked first.
			step := next.step
			for v := start; v < end; v++ {
				if !step(v) {
					return noSubscription{}
				}
			}
		case next != nil:
			// The stages below run inside this loop (see fuse.go). next.step
			// may be nil in the loop form; that case is taken above.
			step := next.step
			for v := start; v < end; v++ {
				if sc.done.Load() || !step(v) {
					return noSubscription{}
				}
			}
		case sc == nil:
			d := direct(o)
			for v := start; v < end; v++ {
				d.OnNext(v)
			}
		default:
			d := direct(o)
			for v := start; v < end; v++ {
				if sc.done.Load() {
					return noSubscription{}
				}
				d.OnNext(v)
			}
		}
		if !sc.cancelled() {
			o.OnCompleted()
		}
		return noSubscription{}
	})
}

// Empty completes at once.
func Empty[T any]() Observable[T] {
	return observableFunc[T](func(o Observer[T]) Subscription {
		o.OnCompleted()
		return noSubscription{}
	})
}

// Never emits nothing and never terminates.
func Never[T any]() Observable[T] {
	return observableFunc[T](func(Observer[T]) Subscription { return noSubscription{} })
}

// Throw fails at once with err (ErrNilError when err is nil).
func Throw[T any](err error) Observable[T] {
	if err == nil {
		err = ErrNilError
	}
	return observableFunc[T](func(o Observer[T]) Subscription {
		o.OnError(err)
		return noSubscription{}
	})
}

var errNilObservable = errors.New("rx.Defer: factory returned a nil Observable")

// Defer calls f on every subscription and subscribes to the observable it returns.
func Defer[T any](f func() Observable[T]) Observable[T] {
	mustArg(f == nil, "Defer", "function f")
	return observableFunc[T](func(o Observer[T]) Subscription {
		src := f()
		if sc := scopeOf(o); sc.cancelled() {
			return noSubscription{}
		}
		if src == nil {
			o.OnError(errNilObservable)
			return noSubscription{}
		}
		sc := ensureScope(o)
		subscribeIn(src, inScope(o, sc), sc)
		return sc
	})
}

// Create makes an observable from a producer. produce runs on the subscribing
// goroutine, once per subscription; it may return at once and keep emitting
// from goroutines it starts, and may call o from several goroutines: calls
// are serialised and anything after a terminal notification is dropped.
// Returning from produce does not complete the stream; calling OnCompleted or
// OnError does. ctx is done when the subscriber unsubscribes or the stream
// terminates, so a producer that waits must also wait on ctx.Done().
func Create[T any](produce func(ctx context.Context, o Observer[T])) Observable[T] {
	mustArg(produce == nil, "Create", "function produce")
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		ctx, cancel := context.WithCancel(context.Background())
		e := &createEmitter[T]{cancel: cancel}
		e.init(down, sc)
		e.mb.h = e
		sc.onCancel(cancel)
		produce(ctx, e)
		return sc
	})
}

type createEmitter[T any] struct {
	serial[T]
	cancel context.CancelFunc
}

func (e *createEmitter[T]) handle(n note[T]) { e.deliver(n) }

func (e *createEmitter[T]) deliver(n note[T]) {
	if n.kind != kindNext && !e.finished {
		e.cancel()
	}
	e.serial.deliver(n)
}

// FromChannel emits the values received from ch and completes when ch is
// closed. One goroutine per subscription receives; it exits when the
// subscriber unsubscribes (a value received at that moment is dropped) or ch
// is closed. A nil channel never emits.
func FromChannel[T any](ch <-chan T) Observable[T] {
	return observableFunc[T](func(o Observer[T]) Subscription {
		sc := ensureScope(o)
		d := direct(o)
		stop := make(chan struct{})
		sc.onCancel(func() { close(stop) })
		go func() {
			for {
				select {
				case <-stop:
					return
				case v, ok := <-ch:
					if sc.cancelled() {
						return
					}
					if !ok {
						o.OnCompleted()
						return
					}
					d.OnNext(v)
				}
			}
		}()
		return sc
	})
}
