package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET MergeTest.Merge_ObservableOfObservable_Data (shortened):
// inners run at once; the stream completes after the outer and the last
// inner. Negative control: an inner's error ends the stream at its time.
func TestMergeAllMergesInnersAsTheyArriveAndCompletesAfterAll(t *testing.T) {
	clk := rxtest.NewClock()
	xs, _ := twoOverlapping(clk)
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.MergeAll(xs) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(220), 101), rxtest.Next(ms(225), 201),
		rxtest.Next(ms(240), 102), rxtest.Next(ms(240), 202), rxtest.Completed[int](ms(250))}, res.Events())

	clk = rxtest.NewClock()
	bad := rxtest.Cold(clk, rxtest.Next(ms(5), 201), rxtest.Error[int](ms(10), rxtest.ErrTest))
	good := rxtest.Cold(clk, rxtest.Next(ms(10), 101), rxtest.Next(ms(30), 102), rxtest.Completed[int](ms(40)))
	ys := rxtest.Hot[rx.Observable[int]](clk, rxtest.Next[rx.Observable[int]](ms(210), good),
		rxtest.Next[rx.Observable[int]](ms(220), bad), rxtest.Completed[rx.Observable[int]](ms(230)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.MergeAll(ys) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(220), 101), rxtest.Next(ms(225), 201),
		rxtest.Error[int](ms(230), rxtest.ErrTest)}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(210), ms(230))}, good.Subscriptions(), "the error unsubscribes the others")
}
