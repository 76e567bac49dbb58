package rx_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// drainNotes reads ch to its close, failing after 30 s of real time (the
// goroutine behind it must end by itself; the bound only catches a hang, so it
// is generous: a loaded 2-core CI under -race can stall a goroutine past 1 s).
func drainNotes[T any](t *testing.T, ch <-chan rx.Notification[T]) []rx.Notification[T] {
	t.Helper()
	var got []rx.Notification[T]
	timeout := time.After(30 * time.Second)
	for {
		select {
		case n, ok := <-ch:
			if !ok {
				return got
			}
			got = append(got, n)
		case <-timeout:
			t.Fatalf("the channel was not closed within 30s; read %v", got)
			return nil
		}
	}
}

// Every value, then the ending, then the close — as samber/ro's
// ToChannel and the Notification of Materialize. Negative control: closing
// without sending the ending lost the error in the second case.
func TestToChannelSendsTheValuesThenTheEndingAndCloses(t *testing.T) {
	got := drainNotes(t, rx.ToChannel(context.Background(), rx.Of(1, 2, 3), 0))
	assert.Equal(t, []rx.Notification[int]{
		{Kind: rx.OnNextKind, Value: 1}, {Kind: rx.OnNextKind, Value: 2}, {Kind: rx.OnNextKind, Value: 3},
		{Kind: rx.OnCompletedKind},
	}, got)
	got = drainNotes(t, rx.ToChannel(context.Background(), rx.Concat(rx.Return(1), rx.Throw[int](rxtest.ErrTest)), 4))
	assert.Equal(t, []rx.Notification[int]{{Kind: rx.OnNextKind, Value: 1}, {Kind: rx.OnErrorKind, Err: rxtest.ErrTest}}, got)
}

// A reader that stops reading and ends its context leaves no goroutine, and
// the source is unsubscribed; the source ran at most the channel's size
// plus the value in hand ahead of the reader (back-pressure, not a queue),
// and stops once the reader's context has ended.
// Negative control: with send ignoring ctx (a plain ch <- n) the source
// ran on after the reader's cancel (1,018 values) until AfterFunc's
// goroutine cancelled it; with run waiting for the ending only (not for
// the scope's end), the Never case left its goroutine and goleak said so.
func TestToChannelBackPressuresTheSourceAndLeavesNoGoroutineWhenTheReaderStops(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	var emitted atomic.Int64
	src := rx.Do(rx.Range(0, 1<<40), func(int) { emitted.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	ch := rx.ToChannel(ctx, src, 4)
	for range 2 {
		n := <-ch
		require.Equal(t, rx.OnNextKind, n.Kind)
	}
	cancel() // the reader stops
	rest := drainNotes(t, ch)
	assert.LessOrEqual(t, len(rest), 4+1, "what was buffered (and the send in hand), nothing more")
	assert.LessOrEqual(t, emitted.Load(), int64(2+4+1), "the source waited for the reader")
	require.NoError(t, goleak.Find(ignore))

	// A source that never emits: the context alone ends the goroutine.
	ctx, cancel = context.WithCancel(context.Background())
	ch = rx.ToChannel(ctx, rx.Never[int](), 0)
	cancel()
	assert.Empty(t, drainNotes(t, ch), "closed without an ending: ctx ended")
	require.NoError(t, goleak.Find(ignore))
}

// A producer on another goroutine blocked on a full channel is released by
// the reader's context, and its OnNext returns. Negative control: with
// send ignoring ctx (a plain ch <- n), the producer's OnNext never returned.
func TestToChannelReleasesAProducerBlockedOnAFullChannel(t *testing.T) {
	returned, subscribed := make(chan struct{}), make(chan struct{})
	src := rx.Create(func(_ context.Context, o rx.Observer[int]) {
		close(subscribed)
		go func() { defer close(returned); o.OnNext(1) }() // nobody reads
	})
	ctx, cancel := context.WithCancel(context.Background())
	ch := rx.ToChannel(ctx, src, 0)
	select { // under an ended ctx ToChannel subscribes nothing
	case <-subscribed:
	case <-time.After(30 * time.Second): // catches a hang only
		t.Fatal("ToChannel did not subscribe within 30s")
	}
	cancel()
	select {
	case <-returned:
	case <-time.After(30 * time.Second): // catches a hang only; generous for a loaded CI
		t.Fatal("the producer's OnNext did not return after the reader's context ended")
	}
	drainNotes(t, ch)
}

// The channel is closed only once src's subscription has ended: a reader
// that sees it closed finds src's cleanups run (here Finally's, made after
// the completion it forwarded), as after First or Collect return. Finally's
// function looks at the channel without waiting (the reader is blocked on
// it, nothing else sends). Negative control, run by hand: with end closing
// the channel (as at 4b8cbd4), every case fails ("closed before the
// cleanup ran"); found by the fused/unfused differential
// (all_differential_test.go), where Finally ran after the close.
func TestToChannelClosesItsChannelOnlyAfterTheSourcesCleanupsHaveRun(t *testing.T) {
	for name, src := range map[string]func(rx.Observable[int]) rx.Observable[int]{
		"completion": func(o rx.Observable[int]) rx.Observable[int] { return o },
		"error": func(o rx.Observable[int]) rx.Observable[int] {
			return rx.Concat(o, rx.Throw[int](rxtest.ErrTest))
		},
	} {
		var ch <-chan rx.Notification[int]
		var closedFirst atomic.Bool
		cleanup := func() {
			select {
			case _, ok := <-ch:
				closedFirst.Store(!ok)
			default:
			}
		}
		ch = rx.ToChannel(context.Background(), rx.Finally(src(rx.Of(1, 2)), cleanup), 0)
		got := drainNotes(t, ch)
		require.Len(t, got, 3, name)
		assert.False(t, closedFirst.Load(), "%s: the channel was closed before the cleanup ran", name)
	}
}

// A blocking consumer given a ctx that has already ended subscribes
// nothing (no factory runs, no work starts) and reports the end: All, First
// and Collect return ctx's error, ToChannel closes its channel without a
// terminal notification. Negative control (run): with ToChannel's
// goroutine subscribing regardless, as before, its row failed with the
// factory run once (the source started work for a reader already gone);
// the other rows passed. The live ctx below is each row's control.
func TestABlockingConsumerGivenAnEndedCtxSubscribesNothing(t *testing.T) {
	consumers := map[string]func(ctx context.Context, src rx.Observable[int]) error{
		"All": func(ctx context.Context, src rx.Observable[int]) error {
			for _, err := range rx.All(ctx, src) {
				if err != nil {
					return err
				}
			}
			return nil
		},
		"First":   func(ctx context.Context, src rx.Observable[int]) error { _, err := rx.First(ctx, src); return err },
		"Collect": func(ctx context.Context, src rx.Observable[int]) error { _, err := rx.Collect(ctx, src); return err },
		"ToChannel": func(ctx context.Context, src rx.Observable[int]) error {
			if got := drainNotes(t, rx.ToChannel(ctx, src, 0)); len(got) == 0 || got[len(got)-1].Kind == rx.OnNextKind {
				return ctx.Err() // closed without a terminal notification: ctx ended
			}
			return nil
		},
	}
	for name, consume := range consumers {
		t.Run(name, func(t *testing.T) {
			var subscribed atomic.Int32
			src := rx.Defer(func() rx.Observable[int] { subscribed.Add(1); return rx.Of(1) })
			ended, cancel := context.WithCancel(context.Background())
			cancel()
			assert.ErrorIs(t, consume(ended, src), context.Canceled)
			assert.Zero(t, subscribed.Load(), "subscribed under an ended ctx")
			assert.NoError(t, consume(context.Background(), src), "control")
			assert.EqualValues(t, 1, subscribed.Load(), "control")
		})
	}
}

// A size too large for a buffer is refused, never a panic (math.MaxInt
// made makechan panic; sizes short of that asked the runtime for
// gigabytes or terabytes at once, a fatal out-of-memory error): the
// channel carries one *ArgumentError and closes, and src is not
// subscribed. Negative control (run): without the bound, the first case
// panicked with "makechan: size out of range". ToChannelLimit itself is
// the control of the bound.
func TestToChannelRefusesASizeOverToChannelLimitWithAnArgumentError(t *testing.T) {
	for _, size := range []int{math.MaxInt, rx.ToChannelLimit + 1} {
		var subscribed atomic.Int32
		src := rx.Defer(func() rx.Observable[int] { subscribed.Add(1); return rx.Of(1) })
		got := drainNotes(t, rx.ToChannel(context.Background(), src, size))
		require.Len(t, got, 1, "size %d", size)
		var ae *rx.ArgumentError
		require.ErrorAs(t, got[0].Err, &ae, "size %d", size)
		assert.Equal(t, "ToChannel", ae.Op)
		assert.Equal(t, "size", ae.Arg)
		assert.Zero(t, subscribed.Load(), "size %d: src was subscribed", size)
	}
	got := drainNotes(t, rx.ToChannel(context.Background(), rx.Of(1), rx.ToChannelLimit))
	assert.Equal(t, []rx.Notification[int]{{Kind: rx.OnNextKind, Value: 1}, {Kind: rx.OnCompletedKind}}, got, "control")
}
