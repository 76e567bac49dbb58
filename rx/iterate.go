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
// completion ends the loop. Breaking out of the loop (or returning, or
// panicking) unsubscribes src.
//
// The source waits while the loop body runs: src's OnNext returns only after
// the body has handled the value, so at most one value is in transit and a
// slow loop slows its source rather than filling memory. The body always runs
// on the ranging goroutine, which is also the goroutine that subscribes to
// src:
//
//   - A value delivered on the ranging goroutine (by Of, Range, a store's
//     initial result inside Subscribe, a subject fed from the loop, a virtual
//     clock advanced there) runs the body right there, inside the source's
//     own loop, with no goroutine hop: a deterministic test can drive such a
//     loop step by step, and a body that feeds the subject it ranges over
//     (a work queue) has its OnNext queued by the subject behind the
//     current delivery, never made to wait. Cost per value: the source's
//     loop and the fused stages above (see the package doc), one call into All's
//     observer and one into the body; no goroutine switch, no allocation,
//     no lock; with a ctx that can end, one ctx.Err before and after the
//     body. `break` ends the body; All unsubscribes before control goes
//     back into the source's loop, which stops before its next value.
//   - A value delivered from another goroutine is handed over to the
//     ranging goroutine, which runs the body while the producer waits: one
//     value in transit, no queue. The hand-over costs two goroutine
//     switches per value (an unbuffered send, then the body's
//     acknowledgement), that is, the scheduler's wake-up latency twice;
//     a producer that needs more throughput batches its values (BufferCount)
//     or is consumed with Subscribe.
//   - A value the loop body itself causes on the ranging goroutine while it
//     runs (it advances a virtual clock that drives the source, say) cannot
//     run the body again from inside it: it is queued and yielded as soon
//     as the body returns, before anything else. That queue holds only what
//     the body itself caused.
//
// A body that feeds a subject which delivers from another goroutine is
// bounded by that subject's mailbox: its OnNext waits for room once 32
// values are queued behind the delivery the body is handling, which only
// ends when the body returns; such a loop ends with ctx. Feed the subject
// from the ranging goroutine (or before ranging), or bound the loop by ctx.
//
// All starts no goroutine: when the loop ends, nothing it started is left
// running. A panic raised by src inside Subscribe (a Map function over
// Range, say) propagates to the ranging goroutine as any call's would. A nil
// src yields an error.
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
			sc:    newScope(),
			yield: yield,
			next:  make(chan T),
			ack:   make(chan struct{}),
			end:   make(chan error, 1),
			ctx:   ctx,
			m:     curg(),
		}
		a.lasting = ctx.Done() == nil
		// Closed as the cancellation starts, before its cleanups run: a
		// producer waiting on the hand-over is released first.
		a.stop = a.sc.doneChan()
		// However the loop ends (break, return, panic, ctx), the source is
		// unsubscribed and a producer waiting on the hand-over released.
		defer a.sc.cancel()
		if ctx.Done() != nil {
			// A source still inside Subscribe (a Create producer looping on
			// this goroutine) sees the end of ctx through its own context.
			defer context.AfterFunc(ctx, a.sc.cancel)()
		}
		subscribeIn[T](src, a, a.sc)
		if !a.flush() {
			return
		}
		done := ctx.Done()
		for {
			select {
			case v := <-a.next:
				// A value and the end of ctx may be ready together: the
				// context wins, so a loop never runs past its deadline.
				ok := a.run(v)
				select {
				case a.ack <- struct{}{}:
				case <-a.stop:
				case <-done: // the producer stopped waiting for the ack
				}
				if !ok {
					return
				}
			case err := <-a.end:
				a.finish(err)
				return
			case <-done:
				a.finish(ctx.Err())
				return
			}
		}
	}
}

// allObserver runs All's loop body for each value. Its fields are touched
// by the ranging goroutine only, except the channels.
type allObserver[T any] struct {
	sc    *scope
	yield func(T, error) bool
	next  chan T
	ack   chan struct{}
	end   chan error
	stop  <-chan struct{} // closed when sc is cancelled
	ctx   context.Context

	m       uintptr // curg() of the ranging goroutine
	lasting bool    // ctx can never end (its Done is nil)
	inBody  bool    // the loop body is running
	stopped bool    // the loop has ended: yield must not be called again
	queued  []T     // values the body caused while it ran
	ended   bool    // a terminal notification arrived while the body ran
	endErr  error   // that notification's error (nil: completion)
	termed  bool    // a terminal notification was handed over (any goroutine)
}

// run yields v and what the body caused meanwhile; it reports whether the
// loop goes on.
func (a *allObserver[T]) run(v T) bool {
	if a.stopped {
		return false
	}
	if err := a.ctx.Err(); err != nil {
		a.finish(err)
		return false
	}
	a.inBody = true
	ok := a.yield(v, nil)
	a.inBody = false
	if !ok {
		a.stopped = true
		a.sc.cancel()
		return false
	}
	return a.flush()
}

// flush yields the values (and the ending) the body caused itself, and
// reports whether the loop goes on.
func (a *allObserver[T]) flush() bool {
	for len(a.queued) > 0 && !a.stopped {
		v := a.queued[0]
		a.queued[0] = *new(T)
		a.queued = a.queued[1:]
		if !a.run(v) {
			return false
		}
	}
	a.queued = nil
	if a.stopped {
		return false
	}
	if a.ended {
		a.finish(a.endErr)
		return false
	}
	if err := a.ctx.Err(); err != nil {
		a.finish(err)
		return false
	}
	return true
}

// finish ends the loop, yielding err if there is one.
func (a *allObserver[T]) finish(err error) {
	if a.stopped {
		return
	}
	a.stopped = true
	a.sc.cancel()
	if err != nil {
		a.yield(*new(T), err)
	}
}

func (a *allObserver[T]) OnNext(v T) {
	if curg() == a.m {
		if a.stopped || a.termed {
			return
		}
		if a.inBody {
			a.queued = append(a.queued, v)
			return
		}
		if a.lasting {
			// The common case, spelled out: a context that cannot end
			// needs no check, and nothing was queued.
			a.inBody = true
			ok := a.yield(v, nil)
			a.inBody = false
			if !ok {
				a.stopped = true
				a.sc.cancel()
			} else if len(a.queued) > 0 || a.ended {
				a.flush()
			}
			return
		}
		a.run(v)
		return
	}
	if a.termed {
		return
	}
	// Waiting on ctx too bounds a loop body that makes its own source emit
	// on its own goroutine, which no hand-over could serve.
	select {
	case a.next <- v:
	case <-a.stop:
		return
	case <-a.ctx.Done():
		return
	}
	select {
	case <-a.ack:
	case <-a.stop:
	case <-a.ctx.Done():
	}
}

func (a *allObserver[T]) OnError(err error) {
	if err == nil {
		err = ErrNilError
	}
	a.terminal(err)
}

func (a *allObserver[T]) OnCompleted() { a.terminal(nil) }

func (a *allObserver[T]) terminal(err error) {
	if a.termed {
		return
	}
	a.termed = true
	if curg() != a.m {
		a.end <- err
		return
	}
	if a.inBody || len(a.queued) > 0 {
		a.ended, a.endErr = true, err // after what the body caused
		return
	}
	a.finish(err)
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
		if next := fuseOf(o); next != nil {
			// The stages below run inside seq's loop (see fuse.go).
			// Checked again after the value, as below: seq computes no
			// value past an unsubscription.
			step := next.step
			seq(func(v T) bool { return !sc.done.Load() && step(v) && !sc.done.Load() })
		} else {
			seq(func(v T) bool {
				if sc.cancelled() {
					return false
				}
				o.OnNext(v)
				return !sc.cancelled()
			})
		}
		if !sc.cancelled() {
			o.OnCompleted()
		}
		return sc
	})
}
