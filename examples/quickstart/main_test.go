package main

import (
	"errors"
	"testing"
	"time"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestASilentSourceFailsExactlyOneVirtualSecondAfterItsLastValue(t *testing.T) {
	clk := rxtest.NewClock() // virtual time: the test never sleeps
	src := rx.NewSubject[int]()
	rec := rxtest.Record(clk, evenSquares(src, clk))
	src.OnNext(3)
	src.OnNext(4)
	clk.Advance(999 * time.Millisecond)
	if rec.Terminated() {
		t.Fatal("failed before its bound")
	}
	clk.Advance(time.Millisecond)
	if !errors.Is(rec.Err(), rx.ErrTimeout) || rec.Values()[0] != 16 {
		t.Fatalf("got %v and %v", rec.Values(), rec.Err())
	}
}
