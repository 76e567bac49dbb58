package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

type keyedRec struct {
	id   string
	size int
}

// After Rx.NET ToDictionaryTest (ToDictionary_Completed,
// ToDictionary_KeySelectorThrows shape, ToDictionary with a duplicate key:
// ArgumentException): the map at completion; a key seen twice fails at its
// arrival with a *DuplicateKeyError and unsubscribes the source, rather than
// dropping one of the values. Negative control: assigning over the old
// entry completed with {a:3 b:2} and lost size 1.
func TestToMapEmitsTheMapAtCompletionAndFailsOnADuplicateKey(t *testing.T) {
	project := func(r keyedRec) (string, int) { return r.id, r.size }
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(210), keyedRec{"a", 1}), rxtest.Next(ms(220), keyedRec{"b", 2}), rxtest.Completed[keyedRec](ms(250)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[map[string]int] { return rx.ToMap(xs, project) })
	assert.Equal(t, []rxtest.Event[map[string]int]{
		rxtest.Next(ms(250), map[string]int{"a": 1, "b": 2}), rxtest.Completed[map[string]int](ms(250)),
	}, res.Events())

	clk = rxtest.NewClock()
	dup := rxtest.Hot(clk, rxtest.Next(ms(210), keyedRec{"a", 1}), rxtest.Next(ms(220), keyedRec{"b", 2}),
		rxtest.Next(ms(230), keyedRec{"a", 3}), rxtest.Completed[keyedRec](ms(250)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[map[string]int] { return rx.ToMap(dup, project) })
	de := as[*rx.DuplicateKeyError](t, failedWith(t, res, ms(230), nil))
	assert.Equal(t, rx.DuplicateKeyError{Op: "ToMap", Key: "a"}, *de)
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(230))}, dup.Subscriptions())

	m, err := collect(t, rx.ToMap(rx.Empty[keyedRec](), project))
	require.NoError(t, err)
	assert.Equal(t, []map[string]int{{}}, m, "an empty map, not nil, for an empty stream")
}
