package rx_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// windowKind is a member of the Window family, built over src, with a way
// to end its open window (as a count, boundaries or a clock do) and the
// contexts of the other sources it subscribes (Window's boundaries).
type windowKind struct {
	name string
	// build returns the operator over src and the function that ends the
	// open window, which holds the one value push gave it when that is
	// called.
	build func(src rx.Observable[int], push func(int)) (w rx.Observable[rx.Observable[int]], end func(), others func() []context.Context)
}

func windowKinds() []windowKind {
	none := func() []context.Context { return nil }
	return []windowKind{
		{"WindowCount", func(src rx.Observable[int], push func(int)) (rx.Observable[rx.Observable[int]], func(), func() []context.Context) {
			return rx.WindowCount(src, 2), func() { push(2) }, none // the second value ends it
		}},
		{"Window", func(src rx.Observable[int], _ func(int)) (rx.Observable[rx.Observable[int]], func(), func() []context.Context) {
			var bctx context.Context
			var b rx.Observer[int]
			bounds := rx.Create(func(ctx context.Context, o rx.Observer[int]) { bctx, b = ctx, o })
			return rx.Window(src, bounds), func() { b.OnNext(0) }, func() []context.Context { return []context.Context{bctx} }
		}},
		{"WindowTime", func(src rx.Observable[int], _ func(int)) (rx.Observable[rx.Observable[int]], func(), func() []context.Context) {
			clk := rxtest.NewClock()
			return rx.WindowTime(src, 100*time.Millisecond, clk), func() { clk.Advance(100 * time.Millisecond) }, none
		}},
	}
}

// panickyWindows subscribes to the windows of w, each with an observer that
// records its values and calls onEnd(i) when window i completes.
func panickyWindows(w rx.Observable[rx.Observable[int]], onEnd func(i int)) (*[][]int, rx.Subscription) {
	var wins [][]int
	sub := w.Subscribe(rx.NewObserver(func(win rx.Observable[int]) {
		i := len(wins)
		wins = append(wins, nil)
		win.Subscribe(rx.NewObserver(func(v int) { wins[i] = append(wins[i], v) }, nil, func() { onEnd(i) }))
	}, nil, nil))
	return &wins, sub
}

// A panic out of a window's observer as the window completes reaches the
// caller that ended it, and loses no value: the next window, made before
// the panic, is announced before the next value. Negative control (run):
// with next completing the window before making its successor, the
// values after the panic went to the completed window, lost, in every
// row (and WindowCount's then held 3).
func TestAPanicOutOfAWindowsCompletionLosesNoValue(t *testing.T) {
	for _, k := range windowKinds() {
		t.Run(k.name, func(t *testing.T) {
			in := rx.NewSubject[int]()
			w, endWindow, _ := k.build(in, in.OnNext)
			wins, sub := panickyWindows(w, func(i int) {
				if i == 0 {
					panic("boom")
				}
			})
			defer sub.Unsubscribe()
			in.OnNext(1)
			assert.Equal(t, "boom", recovered(endWindow), "the panic reaches the caller that ended the window")
			in.OnNext(10)
			in.OnNext(11)
			require.GreaterOrEqual(t, len(*wins), 2, "windows %v", *wins)
			assert.Equal(t, []int{10, 11}, (*wins)[1], "the values after the panic, in the next window (windows %v)", *wins)
		})
	}
}

// A panic out of a window's observer on a value does not make WindowCount
// miscount: its windows still hold n values. Negative control (run): with
// the count raised after the delivery, the first window held 3.
func TestAPanicOutOfAWindowsValueKeepsWindowCountsWindowsWhole(t *testing.T) {
	in := rx.NewSubject[int]()
	var wins [][]int
	rx.WindowCount[int](in, 2).Subscribe(rx.NewObserver(func(w rx.Observable[int]) {
		i := len(wins)
		wins = append(wins, nil)
		w.Subscribe(rx.NewObserver(func(v int) {
			wins[i] = append(wins[i], v)
			if v == 1 || v == 4 {
				panic("boom")
			}
		}, nil, nil))
	}, nil, nil))
	assert.Equal(t, "boom", recovered(func() { in.OnNext(1) }))
	in.OnNext(2)
	in.OnNext(3)
	assert.Equal(t, "boom", recovered(func() { in.OnNext(4) }), "the panic at a window's last value")
	in.OnNext(5)
	assert.Equal(t, [][]int{{1, 2}, {3, 4}, {5}}, wins)
}

// A panic out of a window's observer as the window completes, or as the
// source ends, still releases what the window held: once the outer
// subscription ends nothing is left subscribed (src, and Window's
// boundaries). Negative control (run): with pinRef releasing after its
// observer's terminal and end cancelling the sources after the
// deliveries, src (and Window's boundaries) stayed subscribed in every
// row but two: WindowCount's and WindowTime's at the source's end, where
// src ended itself.
func TestAPanicOutOfAWindowsEndLeavesNothingSubscribed(t *testing.T) {
	for _, k := range windowKinds() {
		for _, at := range []string{"the window's end", "the source's end"} {
			t.Run(k.name+"/"+at, func(t *testing.T) {
				var sctx context.Context
				var src rx.Observer[int]
				create := rx.Create(func(ctx context.Context, o rx.Observer[int]) { sctx, src = ctx, o })
				w, endWindow, others := k.build(create, func(v int) { src.OnNext(v) })
				_, sub := panickyWindows(w, func(int) { panic("boom") })
				require.NotNil(t, src)
				src.OnNext(1)
				if at == "the source's end" {
					endWindow = src.OnCompleted
				}
				assert.Equal(t, "boom", recovered(endWindow))
				sub.Unsubscribe()
				for i, ctx := range append([]context.Context{sctx}, others()...) {
					assert.Error(t, ctx.Err(), "source %d is still subscribed", i)
				}
			})
		}
	}
}

// Every member of the Window family is in windowKinds.
func TestEveryWindowOperatorIsAWindowKind(t *testing.T) {
	kinds := map[string]bool{}
	for _, k := range windowKinds() {
		kinds[k.name] = true
	}
	for _, fd := range exportedFuncs(t) {
		if name := fd.Name.Name; strings.HasPrefix(name, "Window") {
			assert.True(t, kinds[name], "%s is not in windowKinds", name)
		}
	}
}
