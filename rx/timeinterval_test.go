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

// Rx.NET TimeIntervalTest (TimeInterval_Regular): each value with the time
// since the one before it, the first since the subscription (230 - 200).
// Negative control: measuring from the subscription every time gave 30,
// 60, 100, 150, 200.
func TestTimeIntervalGivesTheTimeSinceThePreviousValueOrTheSubscription(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(150), 0), rxtest.Next(ms(230), 1), rxtest.Next(ms(260), 2), rxtest.Next(ms(300), 3),
		rxtest.Next(ms(350), 4), rxtest.Next(ms(400), 5), rxtest.Completed[int](ms(500)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[rx.IntervalValue[int]] { return rx.TimeInterval[int](xs, clk) })
	at := func(n int, v int, d int) rxtest.Event[rx.IntervalValue[int]] {
		return rxtest.Next(ms(n), rx.IntervalValue[int]{Value: v, Interval: ms(d)})
	}
	assert.Equal(t, []rxtest.Event[rx.IntervalValue[int]]{
		at(230, 1, 30), at(260, 2, 30), at(300, 3, 40), at(350, 4, 50), at(400, 5, 50),
		rxtest.Completed[rx.IntervalValue[int]](ms(500)),
	}, res.Events())
}

// On a plain *clock.Mock too (the time operators' rule).
func TestTimeIntervalIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	s := rx.NewSubject[int]()
	rec := rxtest.NewRecorder[rx.IntervalValue[int]](nil)
	rx.TimeInterval[int](s, mock).Subscribe(rec)
	mock.Add(time.Second)
	s.OnNext(1)
	mock.Add(3 * time.Second)
	s.OnNext(2)
	s.OnNext(3)
	s.OnCompleted()
	require.True(t, rec.Completed())
	assert.Equal(t, []rx.IntervalValue[int]{{Value: 1, Interval: time.Second}, {Value: 2, Interval: 3 * time.Second}, {Value: 3}}, rec.Values())
}
