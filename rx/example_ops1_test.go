package rx_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func ExampleSingle() {
	// A lookup that must find exactly one node: none and two are errors
	// the caller can tell apart.
	for _, found := range []rx.Observable[string]{rx.Of("n1"), rx.Empty[string](), rx.Of("n1", "n2")} {
		v, err := rx.First(context.Background(), rx.Single(found))
		switch {
		case errors.Is(err, rx.ErrEmpty):
			fmt.Println("no such node")
		case errors.Is(err, rx.ErrMoreThanOne):
			fmt.Println("ambiguous:", err)
		default:
			fmt.Println("found", v)
		}
	}
	// Output:
	// found n1
	// no such node
	// ambiguous: rx.Single: the stream has more than one value
}

func ExampleSequenceEqual() {
	clk := rxtest.NewClock()
	// Two replicas' change streams: the comparison answers at the first
	// difference, without waiting for either to end.
	a, b := rx.NewSubject[int](), rx.NewSubject[int]()
	rec := rxtest.Record(clk, rx.SequenceEqual[int](a, b))
	a.OnNext(1)
	b.OnNext(1)
	clk.Advance(time.Second)
	a.OnNext(2)
	clk.Advance(time.Second)
	b.OnNext(3)
	for _, e := range rec.Events() {
		fmt.Println(e)
	}
	// Output:
	// OnNext(2s, false)
	// OnCompleted(2s)
}

func ExampleToChannel() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // ends the goroutine behind the channel if we stop early
	for n := range rx.ToChannel(ctx, rx.Of("a", "b"), 1) {
		fmt.Println(n)
	}
	// Output:
	// OnNext(a)
	// OnNext(b)
	// OnCompleted()
}

func ExampleUsing() {
	// A connection opened per subscription and closed when it ends.
	type conn struct{ name string }
	rows := rx.Using(
		func() (*conn, error) { fmt.Println("open"); return &conn{"db"}, nil },
		func(c *conn) rx.Observable[string] { return rx.Of(c.name+":row1", c.name+":row2") },
		func(*conn) { fmt.Println("close") })
	vs, err := rx.Collect(context.Background(), rows)
	fmt.Println(vs, err)
	// Output:
	// open
	// close
	// [db:row1 db:row2] <nil>
}

func ExampleMaterialize() {
	// The error becomes a value, so a log can record it with the rest.
	log, _ := rx.Collect(context.Background(), rx.Materialize(rx.Concat(rx.Of(1, 2), rx.Throw[int](errors.New("disk full")))))
	fmt.Println(log)
	// Output: [OnNext(1) OnNext(2) OnError(disk full)]
}
