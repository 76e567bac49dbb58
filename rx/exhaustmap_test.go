package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The Switch_Data vector read with exhaust semantics: the second request,
// arriving while the first still runs, is dropped.
func TestExhaustMapDropsValuesWhileAnInnerRuns(t *testing.T) {
	clk := rxtest.NewClock()
	ys := map[int]*rxtest.TestObservable[int]{
		1: rxtest.Cold(clk, rxtest.Next(ms(10), 101), rxtest.Next(ms(110), 102), rxtest.Completed[int](ms(150))),
		2: rxtest.Cold(clk, rxtest.Next(ms(10), 201), rxtest.Completed[int](ms(50))),
		3: rxtest.Cold(clk, rxtest.Next(ms(10), 301), rxtest.Next(ms(20), 302), rxtest.Completed[int](ms(150))),
	}
	xs := rxtest.Hot(clk, rxtest.Next(ms(300), 1), rxtest.Next(ms(400), 2), rxtest.Next(ms(500), 3), rxtest.Completed[int](ms(600)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] {
		return rx.ExhaustMap[int, int](xs, func(i int) rx.Observable[int] { return ys[i] })
	})
	assert.Equal(t, []rxtest.Event[int]{
		rxtest.Next(ms(310), 101), rxtest.Next(ms(410), 102),
		rxtest.Next(ms(510), 301), rxtest.Next(ms(520), 302), rxtest.Completed[int](ms(650)),
	}, res.Events())
	assert.Empty(t, ys[2].Subscriptions(), "2 arrived while 1 ran")
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(300), ms(450))}, ys[1].Subscriptions())
}

func TestExhaustMapCompletesWhenTheOuterCompletesWithNoInnerRunning(t *testing.T) {
	vs, err := collect(t, rx.ExhaustMap(rx.Of(1, 2), func(i int) rx.Observable[int] { return rx.Of(i) }))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, vs, "synchronous inners are done before the next value")
}

func TestExhaustMapEndsWithAnInnersError(t *testing.T) {
	_, err := collect(t, rx.ExhaustMap(rx.Of(1), func(int) rx.Observable[int] { return rx.Throw[int](rxtest.ErrTest) }))
	assert.ErrorIs(t, err, rxtest.ErrTest)
}
