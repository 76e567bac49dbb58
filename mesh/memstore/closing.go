package memstore

import (
	"context"
	"sync"

	"github.com/meshrx/meshrx/rx"
)

// closeSignal emits once and completes when the store closes; it is the
// Until that ends every query's stream. Every live query subscribes to it,
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
