package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET AmbTest.Amb_Regular (three sources): the first to notify
// wins and the others are unsubscribed at that moment. Negative control:
// the second source moved later lets the third win.
func TestRaceMirrorsTheFirstSourceToNotifyAndDropsTheOthers(t *testing.T) {
	run := func(secondAt int) ([]rxtest.Event[int], []*rxtest.TestObservable[int]) {
		clk := rxtest.NewClock()
		xs := []*rxtest.TestObservable[int]{
			rxtest.Hot(clk, rxtest.Next(ms(240), 1), rxtest.Completed[int](ms(300))),
			rxtest.Hot(clk, rxtest.Next(ms(secondAt), 2), rxtest.Next(ms(secondAt+30), 3), rxtest.Completed[int](ms(400))),
			rxtest.Hot(clk, rxtest.Next(ms(230), 4), rxtest.Completed[int](ms(500))),
		}
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.Race[int](xs[0], xs[1], xs[2]) })
		return res.Events(), xs
	}
	events, xs := run(220)
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(220), 2), rxtest.Next(ms(250), 3), rxtest.Completed[int](ms(400))}, events)
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(220))}, xs[0].Subscriptions())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(220))}, xs[2].Subscriptions())

	events, _ = run(235)
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(230), 4), rxtest.Completed[int](ms(500))}, events, "control")
}

// An error or a completion wins too (Rx.NET Amb_Throws / RxJS race). A
// synchronous first source wins before the next is subscribed. Negative
// control: Never as the first source lets the second win.
func TestRaceIsWonByAnyNotificationAndBySynchronousSourcesInOrder(t *testing.T) {
	_, err := collect(t, rx.Race(rx.Throw[int](rxtest.ErrTest), rx.Return(1)))
	assert.ErrorIs(t, err, rxtest.ErrTest)
	vs, err := collect(t, rx.Race(rx.Empty[int](), rx.Return(1)))
	assert.NoError(t, err)
	assert.Empty(t, vs)
	vs, err = collect(t, rx.Race(rx.Never[int](), rx.Return(1)))
	assert.NoError(t, err, "control")
	assert.Equal(t, []int{1}, vs)
}

func TestRaceOfNoSourcesNeverNotifies(t *testing.T) {
	rec := rxtest.Record(nil, rx.Race[int]())
	assert.Empty(t, rec.Events())
	rec.Unsubscribe()
}
