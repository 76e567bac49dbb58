package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After RxJS's withLatestFrom marble test: values of the source before the
// other has emitted are dropped; the other's completion does not end the
// stream; the source's does. Negative control: the other emitting before
// 210 lets the first value through.
func TestWithLatestFromPairsEachValueWithTheOthersLatest(t *testing.T) {
	run := func(firstOther rxtest.Event[int]) *rxtest.Recorder[int] {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(240), 2), rxtest.Next(ms(290), 3),
			rxtest.Next(ms(350), 4), rxtest.Completed[int](ms(400)))
		ys := rxtest.Hot(clk, firstOther, rxtest.Next(ms(280), 20), rxtest.Next(ms(300), 30), rxtest.Completed[int](ms(320)))
		return rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] {
			return rx.WithLatestFrom(xs, ys, func(v, o int) int { return 100*v + o })
		})
	}
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(240), 210), rxtest.Next(ms(290), 320),
		rxtest.Next(ms(350), 430), rxtest.Completed[int](ms(400))}, run(rxtest.Next(ms(220), 10)).Events())
	assert.Equal(t, []int{110, 210, 320, 430}, run(rxtest.Next(ms(205), 10)).Values(), "control")
}

// The other's error ends the stream. Negative control: its completion
// does not.
func TestWithLatestFromFailsWithTheOthersError(t *testing.T) {
	run := func(end rxtest.Event[int]) *rxtest.Recorder[int] {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(240), 2), rxtest.Completed[int](ms(400)))
		ys := rxtest.Hot(clk, rxtest.Next(ms(205), 10), end)
		return rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] {
			return rx.WithLatestFrom(xs, ys, func(v, o int) int { return 100*v + o })
		})
	}
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(210), 110), rxtest.Error[int](ms(220), rxtest.ErrTest)},
		run(rxtest.Error[int](ms(220), rxtest.ErrTest)).Events())
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(210), 110), rxtest.Next(ms(240), 210), rxtest.Completed[int](ms(400))},
		run(rxtest.Completed[int](ms(220))).Events(), "control")
}

// The other is subscribed first: a synchronous other is ready for the
// source's first value.
func TestWithLatestFromSubscribesTheOtherFirst(t *testing.T) {
	vs, err := collect(t, rx.WithLatestFrom(rx.Of(1, 2), rx.Of(7, 8), func(v, o int) int { return 10*v + o }))
	assert.NoError(t, err)
	assert.Equal(t, []int{18, 28}, vs)
}
