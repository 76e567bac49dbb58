package rxtest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/meshrx/meshrx/rx"
)

// ErrStalled ends a stream given to Drive that is waited on while no timer
// is pending on its clock: virtual time cannot move it on, and a consumer
// would otherwise wait forever.
var ErrStalled = errors.New("rxtest: the consumer waits for the stream, but no timer is pending on its clock")

// Drive returns src driven by clk, for a consumer that blocks on it — a
// for loop over rx.All, rx.First, rx.Collect:
//
//	for v, err := range rx.All(ctx, rxtest.Drive(clk, pipeline)) { ... }
//
// Subscribing subscribes src on the calling goroutine (values it delivers
// there reach the consumer at once), then, still inside Subscribe on that
// goroutine, moves clk from one due timer to the next: each step runs every
// timer due at that instant, in order, and returns once their deliveries
// have returned (through rx.All, which runs the loop body inside the
// delivery on the ranging goroutine, once the body has handled each value),
// and only then is the next timer looked for. Subscribe thus returns when
// the stream has ended or the subscription was cancelled. Values thus arrive one at a time, at their
// virtual times, in the same order on every run, and the body can read
// clk.Elapsed() to see when each came. The driver stops when the
// subscription ends (the stream terminates, or the consumer unsubscribes,
// breaks out of its loop or its context ends). If no timer is pending while
// src has not ended, the stream fails with ErrStalled instead of leaving the
// consumer waiting.
//
// Only the driver advances clk while the stream runs: the loop body must not
// call Advance (it panics, as any nested Advance does). Drive is for sources
// whose progress comes from clk; a source that also waits for real
// goroutines is not deterministic under it.
func Drive[T any](clk *Clock, src rx.Observable[T]) rx.Observable[T] {
	return rx.Defer(func() rx.Observable[T] {
		var ended atomic.Bool
		mark := func() { ended.Store(true) }
		tracked := rx.Finally(src, mark)
		driver := rx.Create(func(ctx context.Context, o rx.Observer[T]) {
			for ctx.Err() == nil {
				if ended.Load() {
					o.OnCompleted()
					return
				}
				at, ok := clk.nextDue()
				if !ok {
					if !ended.Load() {
						o.OnError(ErrStalled)
					}
					return
				}
				clk.AdvanceTo(at)
			}
		})
		// Merge subscribes src first, on the subscribing goroutine, and
		// then the driver, which moves the clock there, once src's
		// Subscribe has returned (it has then armed its first timers). The
		// driver completes once src has ended, so the merge ends with src;
		// an error of either ends both.
		return rx.Merge(tracked, driver)
	})
}
