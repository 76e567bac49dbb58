package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestShareSubscribesOnceForManyAndUnsubscribesWhenTheLastLeaves(t *testing.T) {
	clk := rxtest.NewClock()
	subscriptions, ended := 0, 0
	src := rx.Finally(rx.Defer(func() rx.Observable[int] {
		subscriptions++
		return rxtest.Cold(clk, rxtest.Next(10*tick, 1), rxtest.Next(20*tick, 2), rxtest.Next(30*tick, 3))
	}), func() { ended++ })
	shared := rx.Share(src)
	a := rxtest.Record(clk, shared)
	clk.Advance(15 * tick)
	b := rxtest.Record(clk, shared)
	clk.Advance(10 * tick)
	assert.Equal(t, 1, subscriptions)
	assert.Equal(t, []int{1, 2}, a.Values())
	assert.Equal(t, []int{2}, b.Values())
	a.Unsubscribe()
	assert.Equal(t, 0, ended, "one subscriber is still there")
	b.Unsubscribe()
	assert.Equal(t, 1, ended, "the last one left")
	assert.Zero(t, clk.Pending())
	c := rxtest.Record(clk, shared)
	clk.Advance(10 * tick)
	assert.Equal(t, 2, subscriptions, "a new subscriber reconnects")
	assert.Equal(t, []int{1}, c.Values())
	c.Unsubscribe()
}

func TestShareReconnectsAfterTheSourceEnded(t *testing.T) {
	n := 0
	shared := rx.Share(rx.Defer(func() rx.Observable[int] { n++; return rx.Of(n, n) }))
	assert.Equal(t, []int{1, 1}, rxtest.Record(nil, shared).Values())
	assert.Equal(t, []int{2, 2}, rxtest.Record(nil, shared).Values())
}
