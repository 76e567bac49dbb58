package rx

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"
)

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
// panicking) unsubscribes src. However the loop ends, src's cleanups (a
// Finally, a Using's release) have run by the time it has, also when the
// end of ctx set them off on another goroutine, or src ended from a
// goroutine of its own (All unsubscribes there once it has taken the end,
// so a Finally's function after the end runs inside that, and the loop,
// having yielded the values queued ahead of the end, waits for it); and a
// synchronous src calls none of its functions after the body last
// returned.
//
// A slow loop slows its source rather than filling memory. The body always
// runs on the ranging goroutine, which is also the goroutine that
// subscribes to src:
//
//   - A value delivered on the ranging goroutine (by Of, Range, a store's
//     initial result inside Subscribe, a subject fed from the loop, a virtual
//     clock advanced there) runs the body right there, inside the source's
//     own loop, with no goroutine hop: the source's OnNext returns only
//     after the body has handled the value. A deterministic test can drive
//     such a loop step by step, and a body that feeds the subject it ranges
//     over (a work queue) has its OnNext queued by the subject behind the
//     current delivery, never made to wait (its cost is below). `break`
//     ends the body; All unsubscribes before control goes back into the
//     source's loop, which stops before its next value.
//   - A value delivered from another goroutine is handed over to the
//     ranging goroutine through a bounded queue: the producer's OnNext
//     returns once the value is queued and waits for room while 64
//     values are queued; the ranging goroutine takes all that
//     is queued at once and runs the body for each. A producer faster than
//     the body thus costs a goroutine switch per batch rather than two per
//     value, and runs at most 128 values ahead of the body (the queue, and
//     the batch the body is working through). Values keep the
//     order of the source's calls, whichever goroutine made them; a
//     terminal notification follows the values queued before it; `break`
//     or the end of ctx drops what is queued, unsubscribes, and releases a
//     producer waiting for room.
//   - A value the loop body itself causes on the ranging goroutine while it
//     runs (it advances a virtual clock that drives the source, say) cannot
//     run the body again from inside it: it is queued behind what was
//     handed over before it and yielded once the body returns. Nothing is
//     taken from the hand-off while the body runs, so such a value never
//     makes room for a producer: the queues hold what the body itself
//     caused beyond the 128 values above.
//
// The cost per value delivered on the ranging goroutine, with no goroutine
// switch, allocation or lock either way (and, with a ctx that can end, one
// ctx.Err check before the body and one after what it caused):
//
//   - Of and Range (alone, through Defer, or under stateless
//     stages that keep the type; see the package doc), subscribed by All
//     itself on the ranging goroutine, make All's observer the last step of
//     their fused loop: the stages' functions, one direct call into that
//     step (a flag set around the body) and one into the body; when the
//     stages fit, in order, into Map, Filter, Map, Filter (none, or any of
//     those four in that order with some left out: MF, FM, MFMF, say; not
//     MMM, FFF, FFM, MMMM or FMFM), the body is called from their own
//     loop, with no step between, and, when ctx cannot end
//     (context.Background()), with one check of the subscription per chunk
//     of values rather than one after each function. No
//     goroutine-identity read, no interface call.
//   - Any other delivery there (a Subject, a store's initial result, a
//     type-changing Map, a virtual clock): one call into All's OnNext,
//     which reads the goroutine's identity (about a nanosecond on amd64 and
//     arm64, a stack trace elsewhere), and one into the body.
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
	if src == nil {
		src = nilSource[T]("All", "src")
	}
	return func(yield func(T, error) bool) {
		var zero T
		if err := ctx.Err(); err != nil {
			yield(zero, err)
			return
		}
		a := &allObserver[T]{
			sc:    newScope(),
			yield: yield,
			wake:  make(chan struct{}, 1),
			space: make(chan struct{}, 1),
			ctx:   ctx,
			m:     curg(),
		}
		a.lasting = ctx.Done() == nil
		// Closed as the cancellation starts, before its cleanups run: a
		// producer waiting for room in the hand-off is released first.
		a.stop = a.sc.doneChan()
		// However the loop ends (break, return, panic, ctx), the source is
		// unsubscribed, its cleanups have run and a producer waiting for
		// room is released before it does.
		a.link.wire(ctx, a.sc)
		defer a.cancel()
		subscribeIn[T](src, a, a.sc)
		done := ctx.Done()
		for {
			// What other goroutines handed over, in one batch: the body
			// runs for each value with no goroutine switch between them.
			a.take()
			if !a.flush() {
				return
			}
			select {
			case <-a.wake:
			case <-done:
				a.finish(ctx.Err())
				return
			}
		}
	}
}

// allHandOff (64 in All's doc) bounds the values a producer on another
// goroutine may hand over to All's loop ahead of its body: its OnNext returns once its value is
// queued, and waits for room while allHandOff values are queued. The
// ranging goroutine takes them all at once and runs the body for each, so
// at most 2×allHandOff values are between a producer and the body.
const allHandOff = 64

// allObserver runs All's loop body for each value. Its fields are touched
// by the ranging goroutine only, except the hand-off (in, inEnd, inErr
// under mu; pending; the channels) and termed.
type allObserver[T any] struct {
	// sc is All's root scope. It must stay All's alone (never handed to a
	// Subscription or an AfterFunc when ctx cannot end): allLoopOwn checks
	// it once per chunk because nothing outside All can cancel it.
	sc    *scope
	link  ctxLink // the end of ctx cancels sc (see cancel)
	yield func(T, error) bool
	stop  <-chan struct{} // closed when sc is cancelled
	ctx   context.Context

	m       uintptr // curg() of the ranging goroutine
	lasting bool    // ctx can never end (its Done is nil)
	inBody  bool    // the loop body is running
	stopped bool    // the loop has ended: yield must not be called again
	queued  []T     // values taken from the hand-off, and those the body caused while it ran
	head    int     // queued[head:] are still to be yielded
	ended   bool    // a terminal notification is to follow what is queued
	endErr  error   // that notification's error (nil: completion)
	termed  bool    // a terminal notification was handed over (any goroutine)

	// The hand-off from producers on other goroutines: a queue of at most
	// allHandOff values and the terminal notification, taken in one batch
	// by the ranging goroutine. The source's calls are serialised, so at
	// most one producer waits for room at a time.
	mu      sync.Mutex
	in      []T
	inEnd   bool
	inErr   error
	pending atomic.Bool   // in or inEnd holds something: read without mu
	wake    chan struct{} // a token: something was handed over
	space   chan struct{} // a token: the ranging goroutine made room
}

// take moves what was handed over into queued, behind what is there.
func (a *allObserver[T]) take() {
	if !a.pending.Load() {
		return
	}
	a.mu.Lock()
	a.queued = append(a.queued, a.in...)
	clear(a.in)
	a.in = a.in[:0]
	if a.inEnd {
		a.inEnd = false
		a.ended, a.endErr = true, a.inErr
	}
	a.pending.Store(false)
	a.mu.Unlock()
	select {
	case a.space <- struct{}{}:
	default:
	}
}

// yieldOne runs the body for v and reports whether the loop goes on.
func (a *allObserver[T]) yieldOne(v T) bool {
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
		a.cancel()
		return false
	}
	return true
}

// cancel unsubscribes the source, returning once its cleanups have run,
// also when the end of ctx started that on AfterFunc's goroutine (see
// ctxLink): a synchronous source goes back into its loop only once it has
// been stopped.
func (a *allObserver[T]) cancel() {
	a.sc.cancel()
	a.link.settle()
}

// run yields v and what the body caused meanwhile; it reports whether the
// loop goes on.
func (a *allObserver[T]) run(v T) bool { return a.yieldOne(v) && a.flush() }

// flush yields the values queued (taken from the hand-off, or caused by the
// body itself) in order, then what was handed over meanwhile, then the
// ending if one came, and reports whether the loop goes on. It runs when no
// body is running: the hand-off is taken only between batches.
func (a *allObserver[T]) flush() bool {
	for {
		for a.head < len(a.queued) && !a.stopped {
			v := a.queued[a.head]
			a.queued[a.head] = *new(T)
			a.head++
			if !a.yieldOne(v) {
				break
			}
		}
		clear(a.queued[a.head:])
		a.queued, a.head = a.queued[:0], 0
		if a.stopped {
			return false
		}
		if a.ended {
			a.finish(a.endErr)
			return false
		}
		if !a.pending.Load() {
			break
		}
		a.take()
	}
	if err := a.ctx.Err(); err != nil {
		a.finish(err)
		return false
	}
	return true
}

// finish ends the loop, yielding err if there is one. A ctx that has
// ended is reported in place of a terminal (a completion, or an error) not
// yet yielded: a completion reached after ctx ended (a Filter that cancels
// and drops the last value, before context.AfterFunc's goroutine cancels
// the scope) must not end the loop as if ctx had not.
func (a *allObserver[T]) finish(err error) {
	if a.stopped {
		return
	}
	if !a.lasting {
		if cerr := a.ctx.Err(); cerr != nil {
			err = cerr
		}
	}
	a.stopped = true
	a.cancel()
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
			// The body caused v: it is yielded once the body returns,
			// behind what was handed over before it. What was handed over
			// stays in the hand-off meanwhile, where it holds the producer
			// to its bound: taken into the batch now, it would make room
			// for the producer while the body is still running.
			if a.pending.Load() {
				a.mu.Lock()
				a.in = append(a.in, v)
				a.mu.Unlock()
			} else {
				a.queued = append(a.queued, v)
			}
			return
		}
		if a.pending.Load() {
			// Values handed over earlier go first.
			a.take()
			a.queued = append(a.queued, v)
			a.flush()
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
			} else if len(a.queued) > 0 || a.ended || a.pending.Load() {
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
	a.mu.Lock()
	for len(a.in) >= allHandOff {
		a.mu.Unlock()
		// Waiting on ctx too bounds a loop body that makes its own source
		// emit on another goroutine, which the hand-off cannot serve.
		select {
		case <-a.space:
		case <-a.stop:
			return
		case <-a.ctx.Done():
			return
		}
		a.mu.Lock()
	}
	if a.sc.cancelled() {
		a.mu.Unlock()
		return
	}
	a.in = append(a.in, v)
	first := !a.pending.Load()
	a.pending.Store(true)
	a.mu.Unlock()
	if first {
		select {
		case a.wake <- struct{}{}:
		default:
		}
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
		// Counted before the loop can see the end, so that the loop, once
		// it has yielded it, waits for this cancellation (settle): a
		// Finally's function after the end runs inside it, as the cleanups
		// do. Nothing on the ranging goroutine stops at sc's end, so the
		// values queued ahead of the end are still yielded.
		a.link.elsewhere.Add(1)
		defer a.link.doneElsewhere()
		a.mu.Lock()
		a.inEnd, a.inErr = true, err
		a.pending.Store(true)
		a.mu.Unlock()
		select {
		case a.wake <- struct{}{}:
		default:
		}
		a.sc.cancel()
		return
	}
	if a.inBody {
		// After what is queued, or handed over (as for a value, nothing is
		// taken from the hand-off while the body runs).
		if a.pending.Load() {
			a.mu.Lock()
			a.inEnd, a.inErr = true, err
			a.mu.Unlock()
		} else {
			a.ended, a.endErr = true, err
		}
		return
	}
	if a.pending.Load() {
		a.take() // what was handed over goes first
	}
	if len(a.queued) > a.head || a.ended {
		a.ended, a.endErr = true, err // after what is queued
		a.flush()
		return
	}
	a.finish(err)
}

func (a *allObserver[T]) rxScope() *scope { return a.sc }
