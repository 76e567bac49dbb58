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

// The hot source of RxJS 4's "BufferWithTime Basic" test, in windows of 100
// (expectations derived here: every window, including the empty last one).
func TestBufferTimeEmitsEveryWindowIncludingEmptyOnes(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(100), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(240), 3),
		rxtest.Next(ms(280), 4), rxtest.Next(ms(320), 5), rxtest.Next(ms(350), 6), rxtest.Next(ms(380), 7),
		rxtest.Next(ms(420), 8), rxtest.Next(ms(470), 9), rxtest.Completed[int](ms(600)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[]int] { return rx.BufferTime[int](xs, ms(100), clk) })
	assert.Equal(t, []rxtest.Event[[]int]{
		rxtest.Next(ms(300), []int{2, 3, 4}), rxtest.Next(ms(400), []int{5, 6, 7}), rxtest.Next(ms(500), []int{8, 9}),
		rxtest.Next(ms(600), []int{}), rxtest.Completed[[]int](ms(600)),
	}, res.Events())
	assert.Zero(t, clk.Pending())
}

func TestBufferTimeEmitsEmptyWindowsOfASilentSource(t *testing.T) {
	clk := rxtest.NewClock()
	rec := rxtest.Record(clk, rx.BufferTime(rx.Never[int](), time.Second, clk))
	clk.Advance(3 * time.Second)
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Next(time.Second, []int{}), rxtest.Next(2*time.Second, []int{}),
		rxtest.Next(3*time.Second, []int{})}, rec.Events())
	rec.Unsubscribe()
	assert.Zero(t, clk.Pending(), "Unsubscribe stops the timer")
}

func TestBufferTimeDropsItsWindowOnError(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Error[int](ms(250), rxtest.ErrTest))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[]int] { return rx.BufferTime[int](xs, ms(100), clk) })
	assert.Equal(t, []rxtest.Event[[]int]{rxtest.Error[[]int](ms(250), rxtest.ErrTest)}, res.Events())
}

func TestBufferTimeOfZeroFailsWithAnArgumentError(t *testing.T) {
	_, err := collect(t, rx.BufferTime(rx.Of(1), 0, rxtest.NewClock()))
	var ae *rx.ArgumentError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, "d", ae.Arg)
}

func TestBufferTimeDeliversNothingAfterUnsubscribeReturned(t *testing.T) {
	clk := lateStops{rxtest.NewClock()}
	s := rx.NewSubject[int]()
	rec := rxtest.Record(clk.Clock, rx.BufferTime[int](s, time.Second, clk))
	s.OnNext(1)
	rec.Unsubscribe()
	clk.Advance(time.Hour)
	assert.Empty(t, rec.Events())
}

func TestBufferTimeIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	s := rx.NewSubject[int]()
	rec := rxtest.NewRecorder[[]int](nil)
	sub := rx.BufferTime[int](s, time.Second, mock).Subscribe(rec)
	defer sub.Unsubscribe()
	s.OnNext(1)
	mock.Add(time.Second)
	require.Eventually(t, func() bool { return len(rec.Values()) == 1 }, 5*time.Second, time.Millisecond)
	s.OnNext(2)
	s.OnCompleted()
	require.True(t, rec.WaitTerminated(5*time.Second))
	assert.Equal(t, [][]int{{1}, {2}}, rec.Values())
}
