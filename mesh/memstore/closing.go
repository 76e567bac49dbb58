package memstore

import (
	"context"
	"sync"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// closeSignal emits once and completes when the store closes; it ends
// every provider's part of a query (untilClosed). Every live query subscribes to it,
// so it keeps its observers in a map: subscribing and leaving cost O(1)
// however many queries are live (a subject copies its observer list on
// each). rx.Create gives each subscription the grammar and "nothing after
// Unsubscribe returns".
type closeSignal struct {
	mu     sync.Mutex
	closed bool
	next   uint64
	obs    map[uint64]rx.Observer[struct{}]
}

func newCloseSignal() *closeSignal {
	return &closeSignal{obs: map[uint64]rx.Observer[struct{}]{}}
}

// Observable returns the signal as a stream.
func (c *closeSignal) Observable() rx.Observable[struct{}] {
	return rx.Create(func(ctx context.Context, o rx.Observer[struct{}]) {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			o.OnNext(struct{}{})
			o.OnCompleted()
			return
		}
		id := c.next
		c.next++
		c.obs[id] = o
		c.mu.Unlock()
		context.AfterFunc(ctx, func() {
			c.mu.Lock()
			delete(c.obs, id)
			c.mu.Unlock()
		})
	})
}

// close fires the signal, once, outside its lock.
func (c *closeSignal) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	obs := c.obs
	c.obs = nil
	c.mu.Unlock()
	for _, o := range obs {
		o.OnNext(struct{}{})
		o.OnCompleted()
	}
}

// untilClosed is a provider of Options.Providers whose part of a query
// ends when the store closes. Only its part: a TakeUntil over the merged
// query would also cut the store's frames still queued for a busy
// subscriber, which Close promises to deliver.
type untilClosed struct {
	mesh.Provider
	closing rx.Observable[struct{}]
}

func (p untilClosed) Query(q *mesh.Query) rx.Observable[mesh.Change] {
	return rx.TakeUntil(p.Provider.Query(q), p.closing)
}
