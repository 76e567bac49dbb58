package rx_test

import (
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// RxJS throttleTime(d) with its default {leading: true, trailing: false}.
func TestThrottleEmitsTheLeadingValueAndDropsTheRestOfItsWindow(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(220), 2), rxtest.Next(ms(249), 3),
		rxtest.Next(ms(250), 4), rxtest.Next(ms(260), 5), rxtest.Next(ms(400), 6), rxtest.Completed[int](ms(410)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Throttle[int](xs, ms(40), clk) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(210), 1), rxtest.Next(ms(250), 4), rxtest.Next(ms(400), 6),
		rxtest.Completed[int](ms(410))}, res.Events(), "a window is [emit, emit+d): 249 is in it, 250 opens the next")
	assert.Equal(t, 7+2, clk.Scheduled(), "the 7 scripted events and Start's 2: Throttle arms no timer of its own")
}

func TestThrottlePassesAnErrorOn(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Error[int](ms(215), rxtest.ErrTest))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Throttle[int](xs, ms(40), clk) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(210), 1), rxtest.Error[int](ms(215), rxtest.ErrTest)}, res.Events())
}

func TestThrottleIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	s := rx.NewSubject[int]()
	rec := rxtest.NewRecorder[int](nil)
	rx.Throttle[int](s, ms(40), mock).Subscribe(rec)
	s.OnNext(1)
	s.OnNext(2)
	mock.Add(ms(40))
	s.OnNext(3)
	assert.Equal(t, []int{1, 3}, rec.Values())
}
