package rx_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// A producer on another goroutine feeding Delay faster than its clock moves
// fills it up to QueueLimit values waiting for their time and then waits for
// room: Delay's memory stays within its bound, and as the clock moves every
// value leaves, in order.
//
// Negative control, run by hand: without the wait in delaySink.enqueue (the
// queue appended to without a bound, as before), the producer handed over
// all 65,636 values while the clock stood still and the test failed with
// "producer handed over 65636 values (bound 65536)".
func TestDelayHoldsAtMostQueueLimitValuesWhileAFasterProducerWaits(t *testing.T) {
	clk := rxtest.NewClock()
	src := rx.NewSubject[int]()
	rec := newSeqRecorder()
	close(rec.release) // the consumer here is the clock
	sub := rx.Delay[int](src, time.Millisecond, clk).Subscribe(rec)
	defer sub.Unsubscribe()
	const total = rx.QueueLimit + 100
	var accepted atomic.Int64
	producer := produce(src, total, &accepted)
	waitParkedOrPast(&accepted, rx.QueueLimit)
	n := accepted.Load()
	for deadline := time.Now().Add(10 * time.Second); ; {
		clk.Advance(time.Millisecond)
		select {
		case <-producer:
		default:
			require.True(t, time.Now().Before(deadline), "the producer is still blocked while the clock moves")
			continue
		}
		break
	}
	clk.Advance(time.Millisecond)
	rec.requireEveryValueInOrder(t, "the stream did not end", total, 1000)
	assert.LessOrEqual(t, n, int64(rx.QueueLimit), "producer handed over %d values (bound %d)", n, rx.QueueLimit)
}

// A value fed back into Delay's source from inside Delay's own delivery,
// with QueueLimit values waiting, never waits for room (the delivery is what
// makes room): it fails the stream with an *OverflowError.
//
// Negative control, run by hand: with the re-entrancy check removed from
// delaySink.enqueue, the delivery waited for itself and the test failed
// with "the re-entrant value waited".
func TestAValueFedBackIntoAFullDelayFromItsDeliveryNeverWaits(t *testing.T) {
	clk := rxtest.NewClock()
	src := rx.NewSubject[int]()
	done := make(chan error, 1)
	var fed atomic.Bool
	sub := rx.Delay[int](src, time.Millisecond, clk).Subscribe(rx.NewObserver(func(v int) {
		if v == 0 && fed.CompareAndSwap(false, true) {
			// The first is due, the others wait a millisecond more.
			for i := range rx.QueueLimit + 1 {
				src.OnNext(-1 - i)
			}
		}
	}, func(err error) { done <- err }, func() { done <- nil }))
	defer sub.Unsubscribe()
	src.OnNext(0)
	returned := make(chan struct{})
	go func() { defer close(returned); clk.Advance(time.Millisecond) }()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the re-entrant value waited")
	}
	var err error
	select {
	case err = <-done:
	default:
		t.Fatal("the stream did not end")
	}
	var oe *rx.OverflowError
	require.True(t, errors.As(err, &oe), "want an *OverflowError, got %v", err)
	assert.Equal(t, "Delay", oe.Op)
	assert.Equal(t, rx.QueueLimit, oe.Limit)
}
