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
