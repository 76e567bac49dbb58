package rx_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// labelled numbers each window's values by the window they came in, as
// Rx.NET's tests do with Select((w, i) => w.Select(x => i + " " + x)).Merge().
func labelled(src rx.Observable[rx.Observable[int]]) rx.Observable[string] {
	i := -1
	return rx.MergeAll(rx.Map(src, func(w rx.Observable[int]) rx.Observable[string] {
		i++
		n := strconv.Itoa(i)
		return rx.Map(w, func(v int) string { return n + " " + strconv.Itoa(v) })
	}))
}

// windowBoundariesXs is the source of Rx.NET's Window_Boundaries tests.
func windowBoundariesXs(clk *rxtest.Clock, end rxtest.Event[int]) *rxtest.TestObservable[int] {
	return rxtest.Hot(clk, rxtest.Next(ms(90), 1), rxtest.Next(ms(180), 2), rxtest.Next(ms(250), 3),
		rxtest.Next(ms(260), 4), rxtest.Next(ms(310), 5), rxtest.Next(ms(340), 6), rxtest.Next(ms(410), 7),
		rxtest.Next(ms(420), 8), rxtest.Next(ms(470), 9), rxtest.Next(ms(550), 10), end)
}

// Rx.NET's Window_Boundaries_Simple: each boundary closes the open window
// and opens the next (windows 3 and 5 get no value), the source's end ends
// everything, and both are unsubscribed then. Negative control: without
// the boundaries (Never), every value is in window 0.
func TestWindowOpensANewWindowAtEachBoundary(t *testing.T) {
	run := func(bounds func(*rxtest.Clock) rx.Observable[bool]) ([]rxtest.Event[string], []rxtest.Span) {
		clk := rxtest.NewClock()
		xs := windowBoundariesXs(clk, rxtest.Completed[int](ms(590)))
		ys := bounds(clk)
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[string] { return labelled(rx.Window[int](xs, ys)) })
		return res.Events(), xs.Subscriptions()
	}
	evs, subs := run(func(clk *rxtest.Clock) rx.Observable[bool] {
		return rxtest.Hot(clk, rxtest.Next(ms(255), true), rxtest.Next(ms(330), true), rxtest.Next(ms(350), true),
			rxtest.Next(ms(400), true), rxtest.Next(ms(500), true), rxtest.Completed[bool](ms(900)))
	})
	assert.Equal(t, []rxtest.Event[string]{
		rxtest.Next(ms(250), "0 3"), rxtest.Next(ms(260), "1 4"), rxtest.Next(ms(310), "1 5"), rxtest.Next(ms(340), "2 6"),
		rxtest.Next(ms(410), "4 7"), rxtest.Next(ms(420), "4 8"), rxtest.Next(ms(470), "4 9"), rxtest.Next(ms(550), "5 10"),
		rxtest.Completed[string](ms(590)),
	}, evs)
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(590))}, subs)

	evs, _ = run(func(*rxtest.Clock) rx.Observable[bool] { return rx.Never[bool]() })
	assert.Equal(t, rxtest.Next(ms(260), "0 4"), evs[1], "control")
}

// Rx.NET's Window_Boundaries_OnCompletedBoundaries, OnErrorSource and
// OnErrorBoundaries: the end of either ends the open window and the outer
// stream at once, and unsubscribes both. Negative control: the source
// alone, with boundaries that never end, runs to its own end.
func TestWindowEndsWithTheFirstEndOfItsSourceOrItsBoundaries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		xsEnd  rxtest.Event[int]
		ysEnd  rxtest.Event[bool]
		want   []rxtest.Event[string]
		ending rxtest.Span
	}{
		{"boundaries complete", rxtest.Completed[int](ms(590)), rxtest.Completed[bool](ms(400)),
			[]rxtest.Event[string]{rxtest.Completed[string](ms(400))}, rxtest.Sub(ms(200), ms(400))},
		{"boundaries fail", rxtest.Completed[int](ms(590)), rxtest.Error[bool](ms(400), rxtest.ErrTest),
			[]rxtest.Event[string]{rxtest.Error[string](ms(400), rxtest.ErrTest)}, rxtest.Sub(ms(200), ms(400))},
		{"source fails", rxtest.Error[int](ms(380), rxtest.ErrTest), rxtest.Completed[bool](ms(500)),
			[]rxtest.Event[string]{rxtest.Next(ms(380), "3 7"), rxtest.Error[string](ms(380), rxtest.ErrTest)}, rxtest.Sub(ms(200), ms(380))},
		{"control: boundaries never end", rxtest.Completed[int](ms(590)), rxtest.Next(ms(1500), true),
			[]rxtest.Event[string]{rxtest.Next(ms(410), "3 7"), rxtest.Next(ms(420), "3 8"), rxtest.Next(ms(470), "3 9"),
				rxtest.Next(ms(550), "3 10"), rxtest.Completed[string](ms(590))}, rxtest.Sub(ms(200), ms(590))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := rxtest.NewClock()
			xs := windowBoundariesXs(clk, tc.xsEnd)
			if tc.xsEnd.Kind == rxtest.OnError { // Rx.NET's OnErrorSource has 7 at 380
				xs = rxtest.Hot(clk, rxtest.Next(ms(250), 3), rxtest.Next(ms(260), 4), rxtest.Next(ms(310), 5),
					rxtest.Next(ms(340), 6), rxtest.Next(ms(380), 7), tc.xsEnd)
			}
			ys := rxtest.Hot(clk, rxtest.Next(ms(255), true), rxtest.Next(ms(330), true), rxtest.Next(ms(350), true), tc.ysEnd)
			res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[string] { return labelled(rx.Window[int](xs, ys)) })
			head := []rxtest.Event[string]{rxtest.Next(ms(250), "0 3"), rxtest.Next(ms(260), "1 4"),
				rxtest.Next(ms(310), "1 5"), rxtest.Next(ms(340), "2 6")}
			assert.Equal(t, append(head, tc.want...), res.Events())
			assert.Equal(t, []rxtest.Span{tc.ending}, xs.Subscriptions())
			assert.Equal(t, []rxtest.Span{tc.ending}, ys.Subscriptions())
		})
	}
}

// The source is subscribed before the boundaries (as in Rx.NET), so a
// synchronous source fills the first window before a boundary that is
// ready at once closes it. Negative control (run): with the boundaries
// subscribed first, both windows are empty.
func TestWindowSubscribesItsSourceBeforeItsBoundaries(t *testing.T) {
	src := rx.Concat(rx.Range(1, 3), rx.Never[int]())
	vs, err := collect(t, windowsOf(rx.Window(src, rx.Of(true))))
	require.NoError(t, err)
	assert.Equal(t, [][]int{{1, 2, 3}, {}}, vs)
}

// As in Rx.NET (and as GroupBy does), unsubscribing the outer stream alone
// keeps the source and the boundaries for the window still observed, until
// that window ends at the next boundary; no new window is announced.
// Negative control: unsubscribing the window too unsubscribes both at that
// moment.
func TestWindowKeepsItsSourceWhileAWindowIsObserved(t *testing.T) {
	run := func(dropWindows bool) ([]string, []rxtest.Span, []rxtest.Span) {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(220), 2), rxtest.Next(ms(240), 3),
			rxtest.Next(ms(250), 4), rxtest.Completed[int](ms(300)))
		ys := rxtest.Hot(clk, rxtest.Next(ms(245), 0), rxtest.Completed[int](ms(400)))
		var log []string
		var outer rx.Subscription
		var windows []rx.Subscription
		clk.Schedule(ms(200), func() {
			n := 0
			outer = rx.Window[int](xs, ys).Subscribe(rx.NewObserver(func(w rx.Observable[int]) {
				name := strconv.Itoa(n)
				n++
				log = append(log, "open "+name)
				windows = append(windows, w.Subscribe(rx.NewObserver(
					func(v int) { log = append(log, name+":"+strconv.Itoa(v)) },
					func(error) { log = append(log, "fail "+name) },
					func() { log = append(log, "end "+name) })))
			}, func(error) { log = append(log, "fail") }, func() { log = append(log, "end") }))
		})
		clk.Schedule(ms(230), func() {
			outer.Unsubscribe()
			if dropWindows {
				for _, s := range windows {
					s.Unsubscribe()
				}
			}
		})
		clk.AdvanceTo(ms(1000))
		return log, xs.Subscriptions(), ys.Subscriptions()
	}
	log, xsSpans, ysSpans := run(false)
	assert.Equal(t, []string{"open 0", "0:1", "0:2", "0:3", "end 0"}, log)
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(245))}, xsSpans)
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(245))}, ysSpans)
	log, xsSpans, ysSpans = run(true)
	assert.Equal(t, []string{"open 0", "0:1", "0:2"}, log, "control")
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(230))}, xsSpans, "control")
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(230))}, ysSpans, "control")
}
