package rx_test

import (
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Rx.NET SampleTest.Sample_Regular (ticks as ms): the value pending when the
// source completes (7 at 380) is emitted at the next tick (400), then the
// completion. Negative control: RxJS's sampleTime would complete at 390 and
// drop 7; a source completing right after a tick (at 360 here, nothing
// pending) still completes at the next tick, with no value.
func TestSampleEmitsTheLatestValueOfEachPeriodAndCompletesAtTheNextTick(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(230), 3),
		rxtest.Next(ms(260), 4), rxtest.Next(ms(300), 5), rxtest.Next(ms(350), 6), rxtest.Next(ms(380), 7),
		rxtest.Completed[int](ms(390)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Sample[int](xs, ms(50), clk) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(250), 3), rxtest.Next(ms(300), 5), rxtest.Next(ms(350), 6),
		rxtest.Next(ms(400), 7), rxtest.Completed[int](ms(400))}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(390))}, xs.Subscriptions())
	assert.Zero(t, clk.Pending(), "the timer stops at the end")

	clk = rxtest.NewClock()
	ys := rxtest.Hot(clk, rxtest.Next(ms(210), 2), rxtest.Next(ms(350), 6), rxtest.Completed[int](ms(360)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Sample[int](ys, ms(50), clk) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(250), 2), rxtest.Next(ms(350), 6), rxtest.Completed[int](ms(400))},
		res.Events(), "control: nothing pending at the end")
}

// An error is passed on at once, dropping the pending value. Negative
// control: the same source completing instead delivers the pending value.
func TestSampleFailsAtOnceOnAnError(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Error[int](ms(220), rxtest.ErrTest))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Sample[int](xs, ms(50), clk) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Error[int](ms(220), rxtest.ErrTest)}, res.Events())

	clk = rxtest.NewClock()
	ys := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Completed[int](ms(220)))
	res = rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Sample[int](ys, ms(50), clk) })
	assert.Equal(t, []int{1}, res.Values(), "control")
}

func TestSampleOfZeroFailsWithAnArgumentError(t *testing.T) {
	_, err := collect(t, rx.Sample(rx.Of(1), 0, rxtest.NewClock()))
	var ae *rx.ArgumentError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, "d", ae.Arg)
}

// Negative control: lateStops runs a stopped timer's callback anyway, so a
// Sample relying on the stop alone would deliver the pending 1.
func TestSampleDeliversNothingAfterUnsubscribeReturned(t *testing.T) {
	clk := lateStops{rxtest.NewClock()}
	s := rx.NewSubject[int]()
	rec := rxtest.Record(clk.Clock, rx.Sample[int](s, time.Second, clk))
	s.OnNext(1)
	rec.Unsubscribe()
	clk.Advance(time.Hour)
	assert.Empty(t, rec.Events())
}

func TestSampleIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	s := rx.NewSubject[int]()
	rec := rxtest.NewRecorder[int](nil)
	sub := rx.Sample[int](s, time.Second, mock).Subscribe(rec)
	defer sub.Unsubscribe()
	s.OnNext(1)
	s.OnNext(2)
	mock.Add(time.Second)
	require.Eventually(t, func() bool { return len(rec.Values()) == 1 }, 5*time.Second, time.Millisecond)
	s.OnNext(3)
	s.OnCompleted()
	mock.Add(time.Second)
	require.True(t, rec.WaitTerminated(5*time.Second))
	assert.Equal(t, []int{2, 3}, rec.Values())
}
