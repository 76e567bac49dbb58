package rxtest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The recipe for testing a consumer written as a for loop over rx.All in
// virtual time: build the pipeline on an rxtest.Clock, range over
// rxtest.Drive(clk, pipeline), and read the virtual time of each value from
// the clock in the loop body. The run is the same every time and takes no
// real time: here a reading every second, of which the loop takes three,
// then a stage that stops answering and is bounded by Timeout.
func ExampleDrive() {
	clk := rxtest.NewClock()
	readings := rx.Map(rx.Interval(time.Second, clk), func(i int) string { return fmt.Sprintf("reading %d", i) })
	pipeline := rx.Concat(
		rx.Take(readings, 3),
		rx.TimeoutStage(rx.Never[string](), "sensor", 5*time.Second, clk),
	)
	for v, err := range rx.All(context.Background(), rxtest.Drive(clk, pipeline)) {
		if err != nil {
			fmt.Println(clk.Elapsed(), "error:", err)
			break
		}
		fmt.Println(clk.Elapsed(), v)
	}
	// Output:
	// 1s reading 0
	// 2s reading 1
	// 3s reading 2
	// 8s error: sensor: no answer within 5s
}
