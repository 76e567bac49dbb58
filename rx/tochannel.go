package rx

import (
	"context"
	"fmt"
	"sync"
)

// ToChannelLimit bounds ToChannel's size: a channel's buffer is made at its
// full size at once, and one far larger fails to be made (a panic, or a
// fatal out-of-memory error the caller cannot recover from).
const ToChannelLimit = 1 << 16

// ToChannel subscribes to src on a goroutine of its own and sends its
// notifications on the returned channel: each value as an OnNextKind
// Notification, then its error or completion, after which the channel is
// closed. The channel holds at most size notifications (size < 0 counts as
// 0: unbuffered; over ToChannelLimit, src is not subscribed and the
// channel carries only an *ArgumentError); a full channel makes src wait —
// its OnNext returns only once the reader has room — so a slow reader
// slows src, and memory stays
// bounded whatever src's rate (samber/ro's ToChannel(size) and RxGo's
// Observe hand their values over so too).
//
// ctx is the reader's: when it ends, src is unsubscribed, a send in progress
// is abandoned (its notification dropped) and the channel is closed without
// a terminal notification, so a reader that stops reading must end ctx, and
// the goroutine then exits whatever src does. A channel closed without an
// OnErrorKind or OnCompletedKind notification means ctx ended (under a ctx
// ended already, src is not subscribed at all). The channel
// is closed once src's subscription has ended: the cleanups that ending
// runs (a Finally, a Using's release, a synchronous source's), on
// ToChannel's goroutine, on the one the end of ctx set them off on, or on
// src's own as it ended, have run by then, as when First or Collect
// return.
func ToChannel[T any](ctx context.Context, src Observable[T], size int) <-chan Notification[T] {
	if src == nil {
		src = nilSource[T]("ToChannel", "src")
	}
	if size < 0 {
		size = 0
	}
	if size > ToChannelLimit {
		ch := make(chan Notification[T], 1)
		ch <- Notification[T]{Kind: OnErrorKind, Err: &ArgumentError{Op: "ToChannel", Arg: "size", Value: size,
			Reason: fmt.Sprintf("must be at most ToChannelLimit (%d)", ToChannelLimit)}}
		close(ch)
		return ch
	}
	t := &toChannel[T]{ctx: ctx, ch: make(chan Notification[T], size), sc: newScope(), ended: make(chan struct{})}
	go t.run(src)
	return t.ch
}

type toChannel[T any] struct {
	ctx context.Context
	ch  chan Notification[T]
	sc  *scope
	// link is wired and settled by run's goroutine; a delivery's end or an
	// abandoned send cancels through it from src's (see ctxLink)
	link ctxLink
	// mu is held by a send and by the close: the channel is closed only
	// once no send can still be made on it. A send holds it only until the
	// reader takes the value or ctx ends.
	mu     sync.Mutex
	closed bool
	ended  chan struct{} // closed by a terminal notification
}

func (t *toChannel[T]) run(src Observable[T]) {
	if t.ctx.Err() != nil {
		// The reader has gone already: start nothing (as First, Collect
		// and All subscribe nothing under an ended ctx).
		t.close()
		return
	}
	t.link.wire(t.ctx, t.sc)
	// A panic out of src's Subscribe (a user function) ends this
	// goroutine's program as any goroutine's panic would; the channel is
	// closed first so that a reader is not left waiting.
	defer t.close()
	// src is unsubscribed, and its cleanups have run (also when the end
	// of ctx started that on another goroutine: ctxLink), before the
	// channel is closed.
	defer t.link.cancel()
	subscribeIn[T](src, t, t.sc)
	select {
	case <-t.ended:
	case <-t.sc.doneChan():
	}
}

func (t *toChannel[T]) send(n Notification[T]) {
	if !t.trySend(n) {
		// The reader has gone: stop src now rather than when AfterFunc's
		// goroutine gets to it (a synchronous src would run on, its
		// values dropped, meanwhile).
		t.link.cancel()
	}
}

// trySend sends n unless the channel is closed; it reports false if ctx
// ended first.
func (t *toChannel[T]) trySend(n Notification[T]) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return true
	}
	if t.ctx.Err() != nil {
		return false
	}
	select {
	case t.ch <- n:
		return true
	case <-t.ctx.Done():
		return false
	}
}

func (t *toChannel[T]) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		close(t.ch)
	}
}

func (t *toChannel[T]) OnNext(v T) { t.send(Notification[T]{Kind: OnNextKind, Value: v}) }
func (t *toChannel[T]) OnError(err error) {
	if err == nil {
		err = ErrNilError
	}
	t.send(Notification[T]{Kind: OnErrorKind, Err: err})
	t.end()
}
func (t *toChannel[T]) OnCompleted() {
	t.send(Notification[T]{Kind: OnCompletedKind})
	t.end()
}

// end unsubscribes src here, inside its end's delivery, so that a cleanup
// src would run once the delivery returned (a Finally's function) runs
// within this cancellation, which run waits for; then it lets run close
// the channel. Closed here, it told the reader src had ended while those
// cleanups were still to run.
func (t *toChannel[T]) end() {
	t.link.cancel()
	close(t.ended)
}
func (t *toChannel[T]) rxScope() *scope { return t.sc }
