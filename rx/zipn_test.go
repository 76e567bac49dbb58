package rx_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET ZipTest's N-ary cases: the n-th values go together; the
// stream completes when a completed source's values have all been zipped
// (b at 250, its last value already zipped at 240). Negative control: b
// with a third value at 305 and its end at 450 gives a third row there and
// completes at 450.
func TestZipPairsTheNthValuesAndCompletesWithTheShortestSource(t *testing.T) {
	run := func(bTail ...rxtest.Event[int]) *rxtest.Recorder[[]int] {
		clk := rxtest.NewClock()
		a := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(220), 2), rxtest.Next(ms(300), 3), rxtest.Completed[int](ms(500)))
		b := rxtest.Hot(clk, append([]rxtest.Event[int]{rxtest.Next(ms(230), 10), rxtest.Next(ms(240), 20)}, bTail...)...)
		c := rxtest.Hot(clk, rxtest.Next(ms(205), 100), rxtest.Next(ms(235), 200), rxtest.Next(ms(280), 300), rxtest.Completed[int](ms(600)))
		return rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[]int] { return rx.Zip[int](a, b, c) })
	}
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Next(ms(230), []int{1, 10, 100}), rxtest.Next(ms(240), []int{2, 20, 200}),
		rxtest.Completed[[]int](ms(250))}, run(rxtest.Completed[int](ms(250))).Events())
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Next(ms(230), []int{1, 10, 100}), rxtest.Next(ms(240), []int{2, 20, 200}),
		rxtest.Next(ms(305), []int{3, 30, 300}), rxtest.Completed[[]int](ms(450))},
		run(rxtest.Next(ms(305), 30), rxtest.Completed[int](ms(450))).Events(), "control")
}

// A source that gets more than ZipLimit ahead fails the stream. Negative
// control: exactly ZipLimit ahead is held.
func TestZipFailsWhenASourceGetsMoreThanZipLimitAhead(t *testing.T) {
	rec := rxtest.Record(nil, rx.Zip(rx.Range(0, rx.ZipLimit+1), rx.Never[int]()))
	var oe *rx.OverflowError
	require.True(t, errors.As(rec.Err(), &oe), "got %v", rec.Err())
	assert.Equal(t, "Zip", oe.Op)
	ctl := rxtest.Record(nil, rx.Zip(rx.Range(0, rx.ZipLimit), rx.Never[int]()))
	assert.False(t, ctl.Terminated(), "control")
	ctl.Unsubscribe()
}

func TestZipOfNoSourcesCompletesAtOnce(t *testing.T) {
	vs, err := collect(t, rx.Zip[int]())
	assert.NoError(t, err)
	assert.Empty(t, vs)
}
