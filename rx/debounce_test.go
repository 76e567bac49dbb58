package rx_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Ported from Rx.NET ThrottleTest.Throttle_TimeSpan_AllPass (Rx.NET's
// Throttle is this Debounce).
func TestDebounceEmitsEachValueFollowedBySilence(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(150), 0), rxtest.Next(ms(210), 1), rxtest.Next(ms(240), 2),
		rxtest.Next(ms(270), 3), rxtest.Next(ms(300), 4), rxtest.Completed[int](ms(400)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Debounce[int](xs, ms(20), clk) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(230), 1), rxtest.Next(ms(260), 2), rxtest.Next(ms(290), 3),
		rxtest.Next(ms(320), 4), rxtest.Completed[int](ms(400))}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(400))}, xs.Subscriptions())
}

// In the manner of Rx.NET ThrottleTest's _AllDrop and _SomeDrop cases (the
// vectors and expectations are this project's).
func TestDebounceEmitsOnlyTheLastValueOfABurstAndThePendingOneAtCompletion(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(150), 0), rxtest.Next(ms(210), 1), rxtest.Next(ms(250), 2),
		rxtest.Next(ms(290), 3), rxtest.Next(ms(330), 4), rxtest.Next(ms(370), 5), rxtest.Next(ms(410), 6),
		rxtest.Next(ms(450), 7), rxtest.Next(ms(490), 8), rxtest.Completed[int](ms(500)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Debounce[int](xs, ms(40), clk) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(500), 8), rxtest.Completed[int](ms(500))}, res.Events(),
		"every gap is exactly 40: no value is followed by 40 of silence before the last")

	clk = rxtest.NewClock()
	xs = rxtest.Hot(clk, rxtest.Next(ms(150), 0), rxtest.Next(ms(210), 1), rxtest.Next(ms(250), 2),
		rxtest.Next(ms(290), 3), rxtest.Next(ms(370), 4), rxtest.Completed[int](ms(400)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Debounce[int](xs, ms(25), clk) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(235), 1), rxtest.Next(ms(275), 2), rxtest.Next(ms(315), 3),
		rxtest.Next(ms(395), 4), rxtest.Completed[int](ms(400))}, res.Events())
}

func TestDebounceDropsThePendingValueOnError(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Error[int](ms(220), rxtest.ErrTest))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Debounce[int](xs, ms(40), clk) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Error[int](ms(220), rxtest.ErrTest)}, res.Events())
	assert.Zero(t, clk.Pending(), "the timer is stopped")
}

func TestDebounceArmsOneTimerForABurst(t *testing.T) {
	clk := rxtest.NewClock()
	s := rx.NewSubject[int]()
	rec := rxtest.Record(clk, rx.Debounce[int](s, time.Second, clk))
	for i := range 1000 {
		s.OnNext(i)
		clk.Advance(time.Millisecond)
	}
	clk.Advance(time.Second)
	assert.Equal(t, []int{999}, rec.Values())
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(time.Second+999*time.Millisecond, 999)}, rec.Events(), "exactly 1s after the last value")
	assert.LessOrEqual(t, clk.Scheduled(), 3, "re-armed on fire, never per value")
}

func TestDebounceDeliversNothingAfterUnsubscribeReturned(t *testing.T) {
	clk := lateStops{rxtest.NewClock()}
	s := rx.NewSubject[int]()
	rec := rxtest.Record(clk.Clock, rx.Debounce[int](s, time.Second, clk))
	s.OnNext(1)
	rec.Unsubscribe()
	clk.Advance(time.Hour) // the timer fires though it was stopped
	assert.Empty(t, rec.Events())
}

func TestDebounceIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	s := rx.NewSubject[int]()
	rec := rxtest.NewRecorder[int](nil)
	rx.Debounce[int](s, time.Second, mock).Subscribe(rec)
	s.OnNext(1)
	s.OnNext(2)
	mock.Add(time.Second)
	require.Eventually(t, func() bool { return len(rec.Values()) == 1 }, 5*time.Second, time.Millisecond,
		"the timer goroutine of the mock delivers 2")
	s.OnNext(3)
	s.OnCompleted()
	require.True(t, rec.WaitTerminated(5*time.Second))
	require.NoError(t, rec.GrammarErr())
	assert.Equal(t, []int{2, 3}, rec.Values())
}
