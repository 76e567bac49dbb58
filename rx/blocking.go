package rx

import (
	"context"
	"sync"
)

// First subscribes to src and returns its first value, unsubscribing at once.
// It returns ErrEmpty if src completes without a value, src's error if it
// fails, and ctx's error if ctx ends first (src is then unsubscribed, also
// while it is still running inside Subscribe). First waits for as long as ctx
// allows, so bound it with a deadline or bound src with Timeout; it starts no
// goroutine of its own (context.AfterFunc runs the cancellation when ctx
// ends). Whichever way First returns, src's cleanups have run by then.
//
// Called on a Subject from inside that Subject's own delivery, First waits
// for its next value, which the Subject cannot deliver until the delivery
// First is inside returns: First returns only when ctx ends. (A
// BehaviorSubject or ReplaySubject answers at once from what it holds.) Use
// the value being delivered instead, or call First from another goroutine.
func First[T any](ctx context.Context, src Observable[T]) (T, error) {
	if src == nil {
		src = nilSource[T]("First", "src")
	}
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	w := &firstObserver[T]{}
	if ctx.Done() != nil {
		w.ctx = ctx
	}
	// ctx is wired to the subscription before subscribing, so a source that
	// runs inside Subscribe (a Create producer looping on this goroutine)
	// sees the cancellation through its own context and returns. However
	// First returns (a panic out of Subscribe, a user function of src,
	// included), src is unsubscribed and its cleanups have run, also when
	// the end of ctx started that on another goroutine (ctxLink).
	w.link.wire(ctx, &w.sc)
	defer w.link.cancel()
	subscribeIn[T](src, w, &w.sc)
	// A source that answered inside Subscribe needs no channel: it is made
	// only for an answer still to come from another goroutine.
	w.mu.Lock()
	if w.has {
		r := w.r
		w.mu.Unlock()
		return r.v, r.err
	}
	w.ch = make(chan firstResult[T], 1)
	w.mu.Unlock()
	select {
	case r := <-w.ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

type firstResult[T any] struct {
	v   T
	err error
}

type firstObserver[T any] struct {
	sc   scope
	link ctxLink
	ctx  context.Context // nil when it can never end
	done bool            // calls into the observer are serialised

	mu  sync.Mutex
	has bool // r is the result
	r   firstResult[T]
	ch  chan firstResult[T] // made by First once it has to wait
}

// finish keeps the first result, after cancelling the subscription: First
// returns only once the source has been unsubscribed.
func (w *firstObserver[T]) finish(r firstResult[T]) {
	if w.done {
		return
	}
	w.done = true
	// A ctx that ended before this delivery is reported in its place (a
	// completion after a Filter cancelled and dropped the last value, say),
	// as First's doc says.
	if w.ctx != nil {
		if err := w.ctx.Err(); err != nil {
			r = firstResult[T]{err: err}
		}
	}
	w.link.cancel() // on First's goroutine, a synchronous src stops here
	w.mu.Lock()
	w.has, w.r = true, r
	ch := w.ch
	w.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

func (w *firstObserver[T]) OnNext(v T)        { w.finish(firstResult[T]{v: v}) }
func (w *firstObserver[T]) OnError(err error) { w.finish(firstResult[T]{err: err}) }
func (w *firstObserver[T]) OnCompleted()      { w.finish(firstResult[T]{err: ErrEmpty}) }
func (w *firstObserver[T]) rxScope() *scope   { return &w.sc }

// Collect subscribes to src and returns all its values once it completes,
// or the values so far with src's error. If ctx ends first it returns nil
// (no values: a delivery racing with the end could still be appending) with
// ctx's error, and src is unsubscribed. It starts no goroutine. Whichever
// way Collect returns, src's cleanups have run by then. The result is the
// whole stream: it holds every value until src ends, so bound an open src
// (Take, TakeUntil, Timeout).
func Collect[T any](ctx context.Context, src Observable[T]) ([]T, error) {
	if src == nil {
		src = nilSource[T]("Collect", "src")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &collectObserver[T]{sc: newScope(), ch: make(chan error, 1), ctx: ctx}
	w.link.wire(ctx, w.sc)
	defer w.link.cancel() // see First
	subscribeIn[T](src, w, w.sc)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	select {
	case err := <-w.ch:
		if w.late {
			return nil, err // ctx ended before the terminal: see above
		}
		return w.vs, err
	case <-ctx.Done():
		// A delivery racing with the cancellation may still be running;
		// hand back nothing rather than a slice it could be appending to.
		return nil, ctx.Err()
	}
}

type collectObserver[T any] struct {
	sc   *scope
	link ctxLink
	ctx  context.Context
	ch   chan error
	vs   []T
	done bool
	late bool // ctx ended before the terminal, whose error is then ctx's
}

// end hands err over, or ctx's error if ctx ended before this terminal was
// delivered (a select on both could otherwise pick the terminal).
func (w *collectObserver[T]) end(err error) {
	w.done = true
	w.link.cancel()
	if cerr := w.ctx.Err(); cerr != nil {
		w.late, err = true, cerr
	}
	w.ch <- err
}

func (w *collectObserver[T]) OnNext(v T) {
	if !w.done {
		w.vs = append(w.vs, v)
	}
}

func (w *collectObserver[T]) OnError(err error) {
	if !w.done {
		w.end(err)
	}
}

func (w *collectObserver[T]) OnCompleted() {
	if !w.done {
		w.end(nil)
	}
}

func (w *collectObserver[T]) rxScope() *scope { return w.sc }
