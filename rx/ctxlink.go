package rx

import (
	"context"
	"sync"
)

// ctxLink ties the end of a blocking consumer's ctx (All, First, Collect,
// ToChannel) to the consumer's root scope through context.AfterFunc, and
// lets the consumer's own goroutine cancel that scope and go on only once
// the cancellation has run, whichever goroutine started it.
//
// scope.cancel returns at once to a caller that lost the race to start it.
// Without the wait, a consumer whose ctx ended while AfterFunc's goroutine
// was cancelling could return before that goroutine had run the source's
// cleanups (a Finally), and a synchronous source, back in its loop, would
// call its user functions for further values until that goroutine reached
// it.
//
// The wait lasts as long as the cleanups: an Unsubscribe never blocks (see
// Subscription), so only a user cleanup that blocks (a Finally waiting for
// the consumer) could hold it, as it would hold a cancellation the
// consumer had run itself.
type ctxLink struct {
	m    uintptr     // curg() of the consumer's goroutine (stop is its alone); 0 when ctx cannot end
	sc   *scope      // the consumer's root scope, which the end of ctx cancels
	stop func() bool // AfterFunc's stop; nil once called, or when ctx cannot end
	// ran counts AfterFunc's cancellation until it has run, or until stop
	// keeps it from running (no allocation, unlike a channel closed by it).
	ran sync.WaitGroup
}

// wire makes the end of ctx cancel sc. It runs on the consumer's
// goroutine, before the source is subscribed: a source still inside
// Subscribe (a Create producer looping on this goroutine) sees the end of
// ctx through its own context.
func (l *ctxLink) wire(ctx context.Context, sc *scope) {
	l.sc = sc
	if ctx.Done() == nil {
		return // ctx can never end: nothing to wire, nothing to wait for
	}
	l.m = curg()
	l.ran.Add(1)
	l.stop = context.AfterFunc(ctx, l.fire)
}

// fire is AfterFunc's cancellation.
func (l *ctxLink) fire() {
	defer l.ran.Done()
	l.sc.cancel()
}

// cancel cancels the scope. On the consumer's goroutine it returns once the
// cancellation has run (see settle); on another (a source delivering from
// its own goroutine) it does not wait, and the consumer settles before it
// returns.
func (l *ctxLink) cancel() {
	l.sc.cancel()
	if l.m != 0 && curg() == l.m { // m is written before src is subscribed, never after
		l.settle()
	}
}

// settle, on the consumer's goroutine once sc is cancelled, unhooks ctx
// and waits for AfterFunc's cancellation if it had started.
func (l *ctxLink) settle() {
	if l.stop == nil {
		return
	}
	if l.stop() {
		l.ran.Done() // stopped before it started: it never runs
	} else {
		l.ran.Wait()
	}
	l.stop = nil
}
