package rx_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func ExampleMap() {
	squares := rx.Map(rx.Range(1, 4), func(n int) int { return n * n })
	vs, err := rx.Collect(context.Background(), squares)
	fmt.Println(vs, err)
	// Output: [1 4 9 16] <nil>
}

func ExampleSelectMany() {
	clk := rxtest.NewClock()
	// Each id is looked up after a delay proportional to it; SelectMany
	// merges the answers in the order they arrive.
	lookup := func(id int) rx.Observable[string] {
		after := rx.Timer(time.Duration(4-id)*time.Second, clk)
		return rx.Map(after, func(time.Time) string { return fmt.Sprintf("node-%d", id) })
	}
	rec := rxtest.Record(clk, rx.SelectMany(rx.Of(1, 2, 3), lookup))
	clk.Advance(5 * time.Second)
	fmt.Println(rec.Values())
	// Output: [node-3 node-2 node-1]
}

func ExampleTimeout() {
	clk := rxtest.NewClock()
	ticks := rx.NewSubject[string]()
	rec := rxtest.Record(clk, rx.Timeout[string](ticks, time.Second, clk))
	ticks.OnNext("a") // at 0s: the bound restarts
	clk.Advance(900 * time.Millisecond)
	ticks.OnNext("b")        // at 0.9s: it restarts again
	clk.Advance(time.Second) // 1.9s: due exactly one second after "b"
	for _, e := range rec.Events() {
		fmt.Println(e)
	}
	// Output:
	// OnNext(0s, a)
	// OnNext(900ms, b)
	// OnError(1.9s, rx: no value within 1s)
}

func ExampleTimeoutStage() {
	clk := rxtest.NewClock()
	never := rx.Never[string]() // a provider that never answers
	rec := rxtest.Record(clk, rx.TimeoutStage(never, "instance key", 10*time.Second, clk))
	clk.Advance(10 * time.Second)
	err := rec.Err()
	var te *rx.TimeoutError
	fmt.Println(err, errors.Is(err, rx.ErrTimeout), errors.As(err, &te) && te.Stage == "instance key")
	// Output: instance key: no answer within 10s true true
}

func ExampleAsyncSubject() {
	// A result computed once and shared: late subscribers get it at once.
	result := rx.NewAsyncSubject[string]()
	rx.Of("draft", "final").Subscribe(result)
	answer, _ := rx.First[string](context.Background(), result)
	fmt.Println(answer)
	// Output: final
}
