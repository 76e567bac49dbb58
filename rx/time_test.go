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

func TestTimerEmitsTheTimeOnceDueThenCompletes(t *testing.T) {
	clk := rxtest.NewClock()
	rec := rxtest.Record(clk, rx.Timer(30*tick, clk))
	clk.Advance(30*tick - 1)
	assert.Empty(t, rec.Events())
	clk.Advance(1)
	require.Len(t, rec.Events(), 2)
	assert.Equal(t, clk.Start().Add(30*tick), rec.Values()[0])
	assert.Equal(t, rxtest.Completed[time.Time](30*tick), rec.Events()[1])
}

func TestTimerIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	rec := rxtest.NewRecorder[time.Time](nil)
	rx.Timer(time.Second, mock).Subscribe(rec)
	mock.Add(999 * time.Millisecond)
	require.False(t, rec.WaitTerminated(20*time.Millisecond), "fired early")
	mock.Add(time.Millisecond)
	require.True(t, rec.WaitTerminated(5*time.Second))
	assert.Equal(t, []time.Time{time.Unix(1, 0)}, rec.Values())
}

func TestDelayShiftsValuesAndCompletionKeepingOrder(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(210*tick, 1), rxtest.Next(220*tick, 2), rxtest.Next(300*tick, 3), rxtest.Completed[int](310*tick))
	res := rxtest.Start(clk, 200*tick, 1000*tick, func() rx.Observable[int] { return rx.Delay[int](xs, 50*tick, clk) })
	assert.Equal(t, []rxtest.Event[int]{
		rxtest.Next(260*tick, 1), rxtest.Next(270*tick, 2), rxtest.Next(350*tick, 3), rxtest.Completed[int](360 * tick),
	}, res.Events())
	assert.Zero(t, clk.Pending())
}

func TestDelayPassesAnErrorAtOnceAndDropsWhatWaits(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(210*tick, 1), rxtest.Error[int](220*tick, rxtest.ErrTest))
	res := rxtest.Start(clk, 200*tick, 1000*tick, func() rx.Observable[int] { return rx.Delay[int](xs, 50*tick, clk) })
	assert.Equal(t, []rxtest.Event[int]{rxtest.Error[int](220*tick, rxtest.ErrTest)}, res.Events())
	assert.Zero(t, clk.Pending())
}

func TestDelayIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	s := rx.NewSubject[int]()
	rec := rxtest.NewRecorder[int](nil)
	rx.Delay[int](s, time.Second, mock).Subscribe(rec)
	s.OnNext(1)
	mock.Add(500 * time.Millisecond)
	s.OnNext(2)
	s.OnCompleted()
	mock.Add(500 * time.Millisecond)
	mock.Add(500 * time.Millisecond)
	require.True(t, rec.WaitTerminated(5*time.Second))
	assert.Equal(t, []int{1, 2}, rec.Values())
	require.NoError(t, rec.GrammarErr())
}

func TestFromChannelEmitsUntilClosedAndLeavesNoGoroutine(t *testing.T) {
	ch := make(chan int, 3)
	ch <- 1
	ch <- 2
	close(ch)
	rec := rxtest.NewRecorder[int](nil)
	rx.FromChannel(ch).Subscribe(rec)
	require.True(t, rec.WaitTerminated(5*time.Second))
	assert.Equal(t, []int{1, 2}, rec.Values())

	open := make(chan int)
	sub := rx.FromChannel(open).Subscribe(rx.NewObserver[int](nil, nil, nil))
	sub.Unsubscribe() // goleak in TestMain fails the package if the receiver stayed
}
