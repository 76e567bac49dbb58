package rx

import (
	"context"
	"sync"
	"sync/atomic"
)

// ctxLink ties the end of a blocking consumer's ctx (All, First, Collect,
// ToChannel) to the consumer's root scope through context.AfterFunc, and
// lets the consumer's own goroutine cancel that scope and go on only once
// the cancellation has run, whichever goroutine started it: AfterFunc's,
// or the source's (First's answer, Collect's end, ToChannel's abandoned
// send, delivered from a goroutine of the source's).
//
// scope.cancel returns at once to a caller that lost the race to start it.
// Without the wait, a consumer whose cancellation lost to another
// goroutine's could return before that goroutine had run the source's
// cleanups (a Finally), and a synchronous source, back in its loop, would
// call its user functions for further values until that goroutine reached
// it.
//
// The wait lasts as long as the cleanups: an Unsubscribe never blocks (see
// Subscription), so only a user cleanup that blocks (a Finally waiting for
// the consumer) could hold it, as it would hold a cancellation the
// consumer had run itself.
type ctxLink struct {
	m    uintptr     // curg() of the consumer's goroutine (stop is its alone)
	sc   *scope      // the consumer's root scope
	stop func() bool // AfterFunc's stop; nil once called, or when ctx cannot end
	// elsewhere counts the cancellations running on other goroutines. Each
	// is counted before it starts, so a consumer whose own cancellation
	// lost to one sees it counted.
	elsewhere atomic.Int32
	mu        sync.Mutex
	idle      chan struct{} // made by a consumer waiting for elsewhere to reach 0
}

// wire makes the end of ctx cancel sc. It runs on the consumer's
// goroutine, before the source is subscribed: a source still inside
// Subscribe (a Create producer looping on this goroutine) sees the end of
// ctx through its own context.
func (l *ctxLink) wire(ctx context.Context, sc *scope) {
	l.sc, l.m = sc, curg()
	if ctx.Done() != nil {
		l.stop = context.AfterFunc(ctx, l.cancelElsewhere)
	}
}

// cancel cancels the scope. On the consumer's goroutine it returns once the
// cancellation has run, whoever started it (see settle); on another it is
// counted, so that the consumer waits for it.
func (l *ctxLink) cancel() {
	if curg() != l.m {
		l.cancelElsewhere()
		return
	}
	l.sc.cancel()
	l.settle()
}

// cancelElsewhere is a cancellation off the consumer's goroutine.
func (l *ctxLink) cancelElsewhere() {
	l.elsewhere.Add(1)
	defer l.doneElsewhere()
	l.sc.cancel()
}

func (l *ctxLink) doneElsewhere() {
	if l.elsewhere.Add(-1) != 0 {
		return
	}
	l.mu.Lock()
	if l.idle != nil {
		close(l.idle)
		l.idle = nil
	}
	l.mu.Unlock()
}

// settle, on the consumer's goroutine once sc is cancelled, unhooks ctx
// and waits for the cancellations other goroutines are running. One that
// has not been counted yet has not started: sc being cancelled, it will
// find nothing to run.
func (l *ctxLink) settle() {
	if l.stop != nil {
		l.stop()
		l.stop = nil
	}
	if l.elsewhere.Load() == 0 {
		return
	}
	l.mu.Lock()
	if l.elsewhere.Load() == 0 {
		l.mu.Unlock()
		return
	}
	if l.idle == nil {
		l.idle = make(chan struct{})
	}
	idle := l.idle
	l.mu.Unlock()
	<-idle
}
