package rx_test

import (
	"context"
	"fmt"
	"time"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func ExampleAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evens := rx.Filter(rx.Range(1, 10), func(n int) bool { return n%2 == 0 })
	for n, err := range rx.All(ctx, evens) {
		if err != nil {
			fmt.Println("error:", err) // the source failed, or ctx ended
			return
		}
		if n > 6 {
			break // unsubscribes the source
		}
		fmt.Println(n)
	}
	// Output:
	// 2
	// 4
	// 6
}

func ExampleSwitchMap() {
	clk := rxtest.NewClock()
	// A search box: every query starts a lookup that answers after 300ms; a
	// newer query abandons the older lookup, so a stale answer never shows.
	queries := rx.NewSubject[string]()
	lookup := func(q string) rx.Observable[string] {
		return rx.Map(rx.Timer(300*time.Millisecond, clk), func(time.Time) string { return "results for " + q })
	}
	rec := rxtest.Record(clk, rx.SwitchMap[string, string](queries, lookup))
	queries.OnNext("go")
	clk.Advance(100 * time.Millisecond)
	queries.OnNext("golang") // the lookup for "go" is unsubscribed
	clk.Advance(time.Second)
	for _, e := range rec.Events() {
		fmt.Println(e)
	}
	// Output:
	// OnNext(400ms, results for golang)
}

func ExampleDebounce() {
	clk := rxtest.NewClock()
	// Keystrokes 100ms apart, then a pause: only the last one of the burst
	// is passed on, 250ms after it.
	keys := rx.NewSubject[string]()
	rec := rxtest.Record(clk, rx.Debounce[string](keys, 250*time.Millisecond, clk))
	for _, k := range []string{"g", "go", "gol"} {
		keys.OnNext(k)
		clk.Advance(100 * time.Millisecond)
	}
	clk.Advance(time.Second)
	keys.OnNext("golang")
	keys.OnCompleted() // the pending value is emitted at completion
	for _, e := range rec.Events() {
		fmt.Println(e)
	}
	// Output:
	// OnNext(450ms, gol)
	// OnNext(1.3s, golang)
	// OnCompleted(1.3s)
}
