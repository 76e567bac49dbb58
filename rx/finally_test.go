package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
)

func TestFinallyRunsOnceAfterTheEndOrOnUnsubscribe(t *testing.T) {
	var order []string
	rx.Finally(rx.Of(1), func() { order = append(order, "finally") }).Subscribe(rx.NewObserver[int](nil, nil, func() { order = append(order, "completed") }))
	assert.Equal(t, []string{"completed", "finally"}, order)
	n := 0
	sub := rx.Finally(rx.Never[int](), func() { n++ }).Subscribe(rx.NewObserver[int](nil, nil, nil))
	sub.Unsubscribe()
	sub.Unsubscribe()
	assert.Equal(t, 1, n)
}

func TestUnderTakeFinallyRunsAfterTheDownstreamCompletion(t *testing.T) {
	var order []string
	rx.Take(rx.Finally(rx.Range(0, 10), func() { order = append(order, "finally") }), 2).
		Subscribe(rx.NewObserver(func(int) { order = append(order, "next") }, nil, func() { order = append(order, "completed") }))
	assert.Equal(t, []string{"next", "next", "completed", "finally"}, order)

	order = nil
	rx.Finally(rx.Range(0, 2), func() { order = append(order, "finally") }).
		Subscribe(rx.NewObserver(func(int) { order = append(order, "next") }, nil, func() { order = append(order, "completed") }))
	assert.Equal(t, []string{"next", "next", "completed", "finally"}, order, "control: the same order without Take")
}
