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

// Rx.NET TimestampTest (Timestamp_Regular): each value with the scheduler's
// time at its arrival. Negative control: stamping with the subscription's
// time gave 200ms on every value.
func TestTimestampStampsEachValueWithTheClocksTimeAtItsArrival(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(230), 1), rxtest.Next(ms(260), 2), rxtest.Next(ms(300), 3),
		rxtest.Next(ms(350), 4), rxtest.Next(ms(400), 5), rxtest.Completed[int](ms(500)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[rx.TimestampValue[int]] { return rx.Timestamp[int](xs, clk) })
	at := func(n int, v int) rxtest.Event[rx.TimestampValue[int]] {
		return rxtest.Next(ms(n), rx.TimestampValue[int]{Value: v, Timestamp: clk.Start().Add(ms(n))})
	}
	assert.Equal(t, []rxtest.Event[rx.TimestampValue[int]]{
		at(230, 1), at(260, 2), at(300, 3), at(350, 4), at(400, 5), rxtest.Completed[rx.TimestampValue[int]](ms(500)),
	}, res.Events())
}

// On a plain *clock.Mock too (the time operators' rule).
func TestTimestampIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	s := rx.NewSubject[int]()
	rec := rxtest.NewRecorder[rx.TimestampValue[int]](nil)
	rx.Timestamp[int](s, mock).Subscribe(rec)
	start := mock.Now()
	s.OnNext(1)
	mock.Add(time.Second)
	s.OnNext(2)
	s.OnCompleted()
	require.True(t, rec.Completed())
	assert.Equal(t, []rx.TimestampValue[int]{{Value: 1, Timestamp: start}, {Value: 2, Timestamp: start.Add(time.Second)}}, rec.Values())
}
