package rxgoadapt

import (
	"context"
	"sync"

	"github.com/meshrx/meshrx/rx"
	"github.com/reactivex/rxgo/v2"
)

// ToRxGo turns src into a cold rxgo observable: every Observe subscribes to
// src once, on the goroutine rxgo.Defer starts for it, and sends its values
// and its error as items; completion closes the channel. The subscription is
// ended when the context given to Observe (rxgo.WithContext) is done; every
// send also gives up then, so a consumer that stops reading and cancels its
// context leaves no goroutine behind.
func ToRxGo[T any](src rx.Observable[T]) rxgo.Observable {
	if src == nil {
		return rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
			rxgo.Error(ErrNilObservable).SendContext(ctx, next)
		}})
	}
	return rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
		produce(ctx, src, next)
	}})
}

// produce runs one subscription to src and returns once nothing more can be
// sent to next, which rxgo.Defer closes as soon as it returns.
func produce[T any](ctx context.Context, src rx.Observable[T], next chan<- rxgo.Item) {
	p := &producer[T]{ctx: ctx, next: next, done: make(chan struct{}), closing: make(chan struct{}), halt: rx.NewReplaySubject[struct{}](1)}
	// TakeUntil lets a send that gave up stop src from inside OnNext, before
	// Subscribe has returned the subscription (an endless synchronous source
	// never returns it). The consumer's cancellation halts src too, from
	// ctx's goroutine (at once when ctx has already ended): a synchronous
	// source that sends nothing (its values filtered out) never meets a
	// send that would notice it.
	halted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(halted)
		p.halt.OnNext(struct{}{})
	})
	defer func() {
		if !stop() {
			<-halted // the halt's goroutine ends src's cleanups before next closes
		}
	}()
	sub := rx.TakeUntil(src, p.halt).Subscribe(p)
	select {
	case <-p.done:
	case <-ctx.Done():
	}
	sub.Unsubscribe()
	p.close()
}

type producer[T any] struct {
	ctx     context.Context
	next    chan<- rxgo.Item
	done    chan struct{}               // closed when src has terminated or a send gave up
	closing chan struct{}               // closed when produce is about to return
	halt    *rx.ReplaySubject[struct{}] // replays: a halt sent before TakeUntil subscribes still stops src
	ended   sync.Once

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
}

// send delivers it unless the consumer's context is done or produce is
// returning; it reports whether it was delivered.
func (p *producer[T]) send(it rxgo.Item) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	p.inflight.Add(1)
	p.mu.Unlock()
	defer p.inflight.Done()
	// A consumer that has cancelled gets nothing more, even if it is
	// still reading: check before offering the item.
	if p.ctx.Err() != nil {
		return false
	}
	select {
	case p.next <- it:
		return true
	case <-p.ctx.Done():
		return false
	case <-p.closing:
		return false
	}
}

// close waits for sends in flight, each of which gives up once closing is
// closed, so none can reach next after produce returns.
func (p *producer[T]) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	close(p.closing)
	p.inflight.Wait()
}

func (p *producer[T]) end() { p.ended.Do(func() { close(p.done) }) }

func (p *producer[T]) OnNext(v T) {
	if !p.send(rxgo.Of(v)) {
		p.end()
		p.halt.OnNext(struct{}{})
	}
}

func (p *producer[T]) OnError(err error) {
	p.send(rxgo.Error(err))
	p.end()
}

func (p *producer[T]) OnCompleted() { p.end() }
