package rxtest_test

import (
	"fmt"
	"time"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func Example() {
	const tick = time.Millisecond
	clk := rxtest.NewClock()
	// A hot source: values at absolute virtual times, whoever listens.
	xs := rxtest.Hot(clk, rxtest.Next(210*tick, 1), rxtest.Next(250*tick, 2), rxtest.Next(410*tick, 3))
	// Subscribe at 200, unsubscribe at 1000, as Rx.NET's TestScheduler.Start.
	res := rxtest.Start(clk, 200*tick, 1000*tick, func() rx.Observable[int] {
		return rx.Timeout[int](xs, 100*tick, clk)
	})
	for _, e := range res.Events() {
		fmt.Println(e)
	}
	fmt.Println(xs.Subscriptions())
	// Output:
	// OnNext(210ms, 1)
	// OnNext(250ms, 2)
	// OnError(350ms, rx: no value within 100ms)
	// [{200ms 350ms}]
}
