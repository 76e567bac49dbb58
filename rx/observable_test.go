package rx_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestUnsubscribeIsIdempotent(t *testing.T) {
	sub := rx.Never[int]().Subscribe(rx.NewObserver[int](nil, nil, nil))
	sub.Unsubscribe()
	sub.Unsubscribe()
	clk := rxtest.NewClock()
	sub = rx.Timer(time.Second, clk).Subscribe(rx.NewObserver[time.Time](nil, nil, nil))
	require.Equal(t, 1, clk.Pending())
	sub.Unsubscribe()
	sub.Unsubscribe()
	assert.Zero(t, clk.Pending(), "unsubscribing stops the timer")
}
