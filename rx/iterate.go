package rx

import (
	"context"
	"errors"
	"iter"
)

var errNilSource = errors.New("rx: nil Observable")

// All ranges over src under ctx:
//
//	for v, err := range rx.All(ctx, src) {
//		if err != nil {
//			return err // src failed, or ctx ended
//		}
//		use(v)
//	}
//
// Each value is yielded as (v, nil). If src fails, All yields (zero, err)
// once and stops; if ctx ends first, it yields (zero, ctx.Err()) and stops;
// completion ends the loop. Breaking out of the loop unsubscribes src.
//
// The source waits while the loop body runs: src's OnNext returns only after
// the body has handled the value, so at most one value is in transit and a
// slow loop slows its source rather than filling memory. The body always runs
// on the ranging goroutine. To make that hold for sources that deliver inside
// Subscribe (Of, Range, a store's initial result) as well as for those that
// deliver from other goroutines, All subscribes on a goroutine of its own and
// hands each value over; that goroutine has returned by the time the loop
// ends, so nothing is left running. The hand-over costs two goroutine
// switches per value: for a tight loop over a synchronous source, Collect or
// an Observer is cheaper.
//
// A value the loop body itself causes to be emitted on the ranging goroutine
// (the body advances a virtual clock that drives the source, say) cannot be
// handed over to the goroutine that is busy running the body: it is queued
// and yielded as soon as the body returns, before anything else. That queue
// holds only what the body itself caused.
//
// A panic raised by src inside Subscribe (a Map function over Range, say) is
// raised again on the ranging goroutine, where it can be recovered as with
// Collect. A nil src yields an error.
func All[T any](ctx context.Context, src Observable[T]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if err := ctx.Err(); err != nil {
			yield(zero, err)
			return
		}
		if src == nil {
			yield(zero, errNilSource)
			return
		}
		a := &allObserver[T]{
			sc:   newScope(),
			next: make(chan T),
			ack:  make(chan struct{}),
			end:  make(chan error, 1),
			ctx:  ctx.Done(),
			m:    curg(),
		}
		// Closed as the cancellation starts, before its cleanups run: a
		// producer waiting on the hand-over inside a timer delivery is
		// released before Unsubscribe waits for that delivery to finish.
		a.stop = a.sc.doneChan()
		subscribed := make(chan struct{})
		crashed := make(chan any, 1)
		go func() {
			// A panic of the source's Subscribe (or of a function it calls
			// synchronously) is raised again on the ranging goroutine, where
			// the caller can recover it, as with Collect.
			defer func() {
				if p := recover(); p != nil {
					crashed <- p
				}
				close(subscribed)
			}()
			subscribeIn[T](src, a, a.sc)
		}()
		// However the loop ends (break, return, panic, ctx), the source is
		// unsubscribed, a producer waiting on the hand-over is released, and
		// the subscribing goroutine has returned.
		defer func() {
			a.sc.cancel()
			<-subscribed
		}()
		done := ctx.Done()
		for {
			if !a.yieldQueued(ctx, yield) {
				return
			}
			select {
			case v := <-a.next:
				// A value and the end of ctx may be ready together: the
				// context wins, so a loop never runs past its deadline.
				if ctx.Err() != nil {
					yield(zero, ctx.Err())
					return
				}
				if !yield(v, nil) || !a.yieldQueued(ctx, yield) {
					return
				}
				select {
				case a.ack <- struct{}{}:
				case <-a.stop:
				case <-done: // the producer stopped waiting for the ack
				}
			case err := <-a.end:
				if err != nil {
					yield(zero, err)
				}
				return
			case <-done:
				a.sc.cancel()
				yield(zero, ctx.Err())
				return
			case p := <-crashed:
				panic(p)
			}
		}
	}
}

// allObserver hands values to the ranging goroutine one at a time.
type allObserver[T any] struct {
	sc   *scope
	next chan T
	ack  chan struct{}
	end  chan error
	stop <-chan struct{} // closed when sc is cancelled
	ctx  <-chan struct{}
	done bool // a terminal notification was handed over

	m      uintptr // curg() of the ranging goroutine
	queued []T     // values the loop body caused on that goroutine; it alone touches them
}

// yieldQueued yields the values the loop body caused itself, and reports
// whether the loop goes on.
func (a *allObserver[T]) yieldQueued(ctx context.Context, yield func(T, error) bool) bool {
	for len(a.queued) > 0 {
		v := a.queued[0]
		a.queued[0] = *new(T)
		a.queued = a.queued[1:]
		if err := ctx.Err(); err != nil {
			yield(*new(T), err)
			return false
		}
		if !yield(v, nil) {
			return false
		}
	}
	a.queued = nil
	return true
}

func (a *allObserver[T]) OnNext(v T) {
	if a.done {
		return
	}
	if curg() == a.m {
		a.queued = append(a.queued, v)
		return
	}
	// Waiting on ctx too bounds a loop body that makes its own source emit
	// on its own goroutine, which no hand-over could serve.
	select {
	case a.next <- v:
	case <-a.stop:
		return
	case <-a.ctx:
		return
	}
	select {
	case <-a.ack:
	case <-a.stop:
	case <-a.ctx:
	}
}

func (a *allObserver[T]) OnError(err error) {
	if a.done {
		return
	}
	a.done = true
	if err == nil {
		err = ErrNilError
	}
	a.end <- err
}

func (a *allObserver[T]) OnCompleted() {
	if a.done {
		return
	}
	a.done = true
	a.end <- nil
}

func (a *allObserver[T]) rxScope() *scope { return a.sc }

// FromSeq emits the values of seq in order and completes, synchronously
// inside Subscribe. Unsubscribing stops the iteration: seq's yield returns
// false at its next value.
func FromSeq[T any](seq iter.Seq[T]) Observable[T] {
	if seq == nil {
		return fail[T](&ArgumentError{Op: "FromSeq", Arg: "seq", Value: "nil", Reason: "must be an iterator"})
	}
	return observableFunc[T](func(o Observer[T]) Subscription {
		sc := ensureScope(o)
		if sc.cancelled() {
			return sc
		}
		seq(func(v T) bool {
			if sc.cancelled() {
				return false
			}
			o.OnNext(v)
			return !sc.cancelled()
		})
		if !sc.cancelled() {
			o.OnCompleted()
		}
		return sc
	})
}
