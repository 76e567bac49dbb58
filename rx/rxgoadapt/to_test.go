package rxgoadapt_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxgoadapt"
	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestToRxGoIsColdEveryObserveIsItsOwnRxSubscription(t *testing.T) {
	ctx := boundedCtx(t)
	var subscriptions atomic.Int32
	src := rx.Defer(func() rx.Observable[int] {
		subscriptions.Add(1)
		return rx.Of(1, 2, 3)
	})
	obs := rxgoadapt.ToRxGo(src)

	first, errs := readRxGo(t, obs.Observe(rxgo.WithContext(ctx)))
	require.Empty(t, errs)
	second, errs := readRxGo(t, obs.Observe(rxgo.WithContext(ctx)))
	require.Empty(t, errs)
	assert.Equal(t, []any{1, 2, 3}, first)
	assert.Equal(t, []any{1, 2, 3}, second)
	assert.Equal(t, int32(2), subscriptions.Load())

	// Negative control: an eager rxgo source shares one run, so this test
	// tells cold from shared.
	eager := rxgo.Create([]rxgo.Producer{sendItems(rxgo.Of(1), rxgo.Of(2), rxgo.Of(3))})
	first, _ = readRxGo(t, eager.Observe(rxgo.WithContext(ctx)))
	second, _ = readRxGo(t, eager.Observe(rxgo.WithContext(ctx)))
	assert.Equal(t, []any{1, 2, 3}, first)
	assert.Empty(t, second)
	goleak.VerifyNone(t)
}

func TestAnAbandonedToRxGoConsumerLeavesNothingRunning(t *testing.T) {
	cases := []struct {
		name string
		src  rx.Observable[int]
	}{
		{"endless synchronous rx.Range", rx.Range(0, math.MaxInt)},
		{"endless asynchronous rx.Create", rx.Create(func(ctx context.Context, o rx.Observer[int]) {
			go func() {
				for i := 0; ctx.Err() == nil; i++ {
					o.OnNext(i)
				}
			}()
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			unsubscribed := make(chan struct{})
			src := rx.Finally(c.src, func() { close(unsubscribed) })
			ctx, cancel := context.WithCancel(boundedCtx(t))
			items := rxgoadapt.ToRxGo(src).Observe(rxgo.WithContext(ctx))
			for want := range 3 {
				it := receive(t, items, "the next item")
				require.Equal(t, want, it.V)
			}
			// The consumer stops reading and cancels. With a send that did
			// not watch the context, the producer would stay blocked on the
			// unread channel and the rx side would never be unsubscribed
			// (the next test shows that in the test itself).
			cancel()
			waitClosed(t, unsubscribed, "the rx subscription to end after the consumer cancelled")
			goleak.VerifyNone(t)
		})
	}
}

// signalled closes subscribed once an observer is subscribed to src, so a
// test knows when values pushed into a hot source can be seen.
type signalled[T any] struct {
	src        rx.Observable[T]
	subscribed chan struct{}
}

func (s signalled[T]) Subscribe(o rx.Observer[T]) rx.Subscription {
	sub := s.src.Subscribe(o)
	close(s.subscribed)
	return sub
}

// naiveToRxGo sends without watching the consumer's context: the shape the
// adapter must not have, used as a negative control.
func naiveToRxGo(src rx.Observable[int]) rxgo.Observable {
	return rxgo.Defer([]rxgo.Producer{func(_ context.Context, next chan<- rxgo.Item) {
		done := make(chan struct{})
		src.Subscribe(rx.NewObserver(
			func(v int) { next <- rxgo.Of(v) },
			func(err error) { next <- rxgo.Error(err); close(done) },
			func() { close(done) }))
		<-done
	}})
}

func TestToRxGoEndsTheRxSubscriptionWhenTheConsumerCancels(t *testing.T) {
	run := func(t *testing.T, adapt func(rx.Observable[int]) rxgo.Observable) (stillSubscribed bool) {
		subject := rx.NewSubject[int]()
		subscribed, unsubscribed := make(chan struct{}), make(chan struct{})
		src := rx.Finally[int](signalled[int]{subject, subscribed}, func() { close(unsubscribed) })
		ctx, cancel := context.WithCancel(boundedCtx(t))
		items := adapt(src).Observe(rxgo.WithContext(ctx))
		waitClosed(t, subscribed, "the producer to subscribe")
		pushed := make(chan struct{})
		go func() { subject.OnNext(1); close(pushed) }()
		require.Equal(t, 1, receive(t, items, "the first item").V)
		waitClosed(t, pushed, "the first value to be handed over")

		cancel()
		// A value pushed now reaches the consumer only if the rx
		// subscription outlived the cancellation.
		go subject.OnNext(2)
		it, open := receive2(t, items)
		if open {
			require.Equal(t, 2, it.V)
			subject.OnCompleted()
			readRxGo(t, items)
			return true
		}
		waitClosed(t, unsubscribed, "the rx subscription to end")
		return false
	}

	assert.False(t, run(t, rxgoadapt.ToRxGo[int]), "the adapter ends the rx subscription")
	goleak.VerifyNone(t)
	assert.True(t, run(t, naiveToRxGo), "negative control: a context-blind send keeps it")
	goleak.VerifyNone(t)
}

// receive2 receives from an rxgo channel within the wait budget, reporting
// whether it was still open.
func receive2(t *testing.T, items <-chan rxgo.Item) (rxgo.Item, bool) {
	t.Helper()
	type result struct {
		it rxgo.Item
		ok bool
	}
	res := make(chan result, 1)
	go func() { it, ok := <-items; res <- result{it, ok} }()
	r := receive(t, res, "the rxgo channel to yield an item or close")
	return r.it, r.ok
}

func TestAnRxErrorBecomesAnRxGoErrorItemAfterTheValues(t *testing.T) {
	ctx := boundedCtx(t)
	src := rx.Concat(rx.Of(1, 2), rx.Throw[int](errBoom))
	vs, errs := readRxGo(t, rxgoadapt.ToRxGo(src).Observe(rxgo.WithContext(ctx)))
	assert.Equal(t, []any{1, 2}, vs)
	require.Len(t, errs, 1)
	assert.Same(t, errBoom, errs[0], "the rx error is passed on unchanged")

	// Negative control: the same values without the failure end the
	// channel with no error item.
	_, errs = readRxGo(t, rxgoadapt.ToRxGo(rx.Of(1, 2)).Observe(rxgo.WithContext(ctx)))
	assert.Empty(t, errs)
	goleak.VerifyNone(t)
}
