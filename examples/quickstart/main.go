// Command quickstart is the README's quick start: a bounded pipeline
// collected under a context. Its test (main_test.go) drives the same
// pipeline in virtual time.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/meshrx/meshrx/rx"
)

// evenSquares squares the even values of src; it fails if src stays silent
// for a second.
func evenSquares(src rx.Observable[int], clk clock.Clock) rx.Observable[int] {
	evens := rx.Filter(src, func(v int) bool { return v%2 == 0 })
	return rx.Timeout(rx.Map(evens, func(v int) int { return v * v }), time.Second, clk)
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	squares, err := rx.Collect(ctx, evenSquares(rx.Range(1, 10), clock.New()))
	fmt.Println(squares, err) // [4 16 36 64 100] <nil>
}
