package rx_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/meshrx/meshrx/rx"
)

func ExampleGroupBy() {
	// Count words by their first letter: each group is reduced to its count
	// as it arrives (subscribing inside the outer stream's OnNext, so the
	// group's first value is seen).
	words := rx.Of("apple", "bean", "avocado", "beet", "cherry", "artichoke")
	counts := rx.SelectMany(rx.GroupBy(words, func(w string) byte { return w[0] }),
		func(g rx.Group[byte, string]) rx.Observable[string] {
			return rx.Map(rx.Count(g), func(n int) string { return fmt.Sprintf("%c: %d", g.Key, n) })
		})
	got, err := rx.Collect(context.Background(), counts)
	fmt.Println(strings.Join(got, ", "), err)
	// Output:
	// a: 3, b: 2, c: 1 <nil>
}

func ExampleSelectManyLimit() {
	// At most two lookups run at once; the others wait their turn in order
	// (a bounded queue: rx.QueueLimit).
	lookup := func(id int) rx.Observable[string] { return rx.Return(fmt.Sprintf("user %d", id)) }
	names, err := rx.Collect(context.Background(), rx.SelectManyLimit(rx.Of(1, 2, 3), lookup, 2))
	fmt.Println(names, err)
	// Output:
	// [user 1 user 2 user 3] <nil>
}

func ExampleZip() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := rx.Collect(ctx, rx.Zip(rx.Of(1, 2, 3), rx.Of(10, 20, 30), rx.Of(100, 200)))
	fmt.Println(rows, err) // the shortest source ends it
	// Output:
	// [[1 10 100] [2 20 200]] <nil>
}
