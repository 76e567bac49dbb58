package rx_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Ported from Rx.NET SwitchTest.Switch_Data: three cold inners, each
// replaced by the next before it has finished.
func TestSwitchMapMirrorsTheLatestInnerAndCompletesAfterIt(t *testing.T) {
	clk := rxtest.NewClock()
	ys := map[int]*rxtest.TestObservable[int]{
		1: rxtest.Cold(clk, rxtest.Next(ms(10), 101), rxtest.Next(ms(20), 102), rxtest.Next(ms(110), 103),
			rxtest.Next(ms(120), 104), rxtest.Next(ms(210), 105), rxtest.Next(ms(220), 106), rxtest.Completed[int](ms(230))),
		2: rxtest.Cold(clk, rxtest.Next(ms(10), 201), rxtest.Next(ms(20), 202), rxtest.Next(ms(30), 203),
			rxtest.Next(ms(40), 204), rxtest.Completed[int](ms(50))),
		3: rxtest.Cold(clk, rxtest.Next(ms(10), 301), rxtest.Next(ms(20), 302), rxtest.Next(ms(30), 303),
			rxtest.Next(ms(40), 304), rxtest.Completed[int](ms(150))),
	}
	xs := rxtest.Hot(clk, rxtest.Next(ms(300), 1), rxtest.Next(ms(400), 2), rxtest.Next(ms(500), 3), rxtest.Completed[int](ms(600)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] {
		return rx.SwitchMap[int, int](xs, func(i int) rx.Observable[int] { return ys[i] })
	})
	assert.Equal(t, []rxtest.Event[int]{
		rxtest.Next(ms(310), 101), rxtest.Next(ms(320), 102),
		rxtest.Next(ms(410), 201), rxtest.Next(ms(420), 202), rxtest.Next(ms(430), 203), rxtest.Next(ms(440), 204),
		rxtest.Next(ms(510), 301), rxtest.Next(ms(520), 302), rxtest.Next(ms(530), 303), rxtest.Next(ms(540), 304),
		rxtest.Completed[int](ms(650)),
	}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(600))}, xs.Subscriptions())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(300), ms(400))}, ys[1].Subscriptions())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(400), ms(450))}, ys[2].Subscriptions())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(500), ms(650))}, ys[3].Subscriptions())
}

// After Rx.NET SwitchTest.Switch_InnerThrows (inners shortened).
func TestSwitchMapEndsWithAnInnersError(t *testing.T) {
	clk := rxtest.NewClock()
	ys := map[int]*rxtest.TestObservable[int]{
		1: rxtest.Cold(clk, rxtest.Next(ms(10), 101), rxtest.Next(ms(20), 102), rxtest.Next(ms(110), 103), rxtest.Completed[int](ms(230))),
		2: rxtest.Cold(clk, rxtest.Next(ms(10), 201), rxtest.Next(ms(20), 202), rxtest.Error[int](ms(30), rxtest.ErrTest)),
		3: rxtest.Cold(clk, rxtest.Next(ms(10), 301), rxtest.Completed[int](ms(150))),
	}
	xs := rxtest.Hot(clk, rxtest.Next(ms(300), 1), rxtest.Next(ms(400), 2), rxtest.Next(ms(500), 3), rxtest.Completed[int](ms(600)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] {
		return rx.SwitchMap[int, int](xs, func(i int) rx.Observable[int] { return ys[i] })
	})
	assert.Equal(t, []rxtest.Event[int]{
		rxtest.Next(ms(310), 101), rxtest.Next(ms(320), 102), rxtest.Next(ms(410), 201), rxtest.Next(ms(420), 202),
		rxtest.Error[int](ms(430), rxtest.ErrTest),
	}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(430))}, xs.Subscriptions())
	assert.Empty(t, ys[3].Subscriptions())
}

func TestSwitchMapOverSynchronousInnersEmitsEachInFull(t *testing.T) {
	vs, err := collect(t, rx.SwitchMap(rx.Of(1, 2, 3), func(i int) rx.Observable[int] { return rx.Of(i*10, i*10+1) }))
	require.NoError(t, err)
	assert.Equal(t, []int{10, 11, 20, 21, 30, 31}, vs)
}

func TestSwitchMapNeverDeliversAnOldInnersValueAfterANewInnersValue(t *testing.T) {
	// Inners feed from their own goroutines while the outer switches: once a
	// value of inner k has been delivered, no value of an inner < k may be.
	// (A value an old inner was already delivering when the switch happened
	// may still finish arriving; it is never reordered after a newer one.)
	run := func(flatten func(rx.Observable[int], func(int) rx.Observable[int]) rx.Observable[int]) (stale int) {
		outer := rx.NewSubject[int]()
		var wg sync.WaitGroup
		inner := func(k int) rx.Observable[int] {
			return rx.Create(func(ctx context.Context, o rx.Observer[int]) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						o.OnNext(k)
					}
				}()
			})
		}
		last := 0 // calls into one observer never overlap
		sub := flatten(outer, inner).Subscribe(rx.NewObserver(func(k int) {
			if k < last {
				stale++
			}
			last = max(last, k)
		}, nil, nil))
		for k := 1; k <= 200; k++ {
			outer.OnNext(k)
		}
		sub.Unsubscribe()
		wg.Wait()
		return stale
	}
	assert.Zero(t, run(rx.SwitchMap[int, int]))
}

func TestSwitchMapFailsWhenTheSelectorReturnsNil(t *testing.T) {
	_, err := collect(t, rx.SwitchMap(rx.Of(1), func(int) rx.Observable[int] { return nil }))
	assert.Error(t, err)
}

func TestSwitchMapUnsubscribesThePreviousInnerAtTheSwitch(t *testing.T) {
	run := func(flatten func(rx.Observable[int], func(int) rx.Observable[string]) rx.Observable[string]) []string {
		outer := rx.NewSubject[int]()
		inners := []*rx.Subject[string]{rx.NewSubject[string](), rx.NewSubject[string]()}
		rec := rxtest.Record(nil, flatten(outer, func(i int) rx.Observable[string] { return inners[i] }))
		outer.OnNext(0)
		inners[0].OnNext("a0")
		outer.OnNext(1)
		inners[0].OnNext("stale") // the old inner, after the switch
		inners[1].OnNext("b0")
		return rec.Values()
	}
	assert.Equal(t, []string{"a0", "b0"}, run(rx.SwitchMap[int, string]))
	t.Run("negative control: SelectMany keeps the old inner", func(t *testing.T) {
		assert.Equal(t, []string{"a0", "stale", "b0"}, run(rx.SelectMany[int, string]))
	})
}
