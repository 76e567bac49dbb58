package rxgoadapt_test

import (
	"context"
	"math"
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxgoadapt"
	"github.com/reactivex/rxgo/v2"
	"go.uber.org/goleak"
)

// A consumer's cancellation must reach a source that is busy inside its
// Subscribe without sending anything: here an endless synchronous Range
// whose every value a Filter drops, so no send ever meets the context.
//
// Negative control (run): with produce's context.AfterFunc removed the
// producing goroutine loops on forever — the rx subscription never ends
// ("waited 5s for the rx subscription to end after the consumer cancelled").
func TestToRxGoEndsASynchronousSourceThatSendsNothingWhenTheConsumerCancels(t *testing.T) {
	unsubscribed := make(chan struct{})
	subscribed := make(chan struct{})
	src := rx.Finally(rx.Filter(rx.Range(0, math.MaxInt), func(v int) bool {
		if v == 0 {
			close(subscribed)
		}
		return false
	}), func() { close(unsubscribed) })
	ctx, cancel := context.WithCancel(boundedCtx(t))
	items := rxgoadapt.ToRxGo(src).Observe(rxgo.WithContext(ctx))
	waitClosed(t, subscribed, "the producer to subscribe")
	cancel()
	waitClosed(t, unsubscribed, "the rx subscription to end after the consumer cancelled")
	readRxGo(t, items)
	goleak.VerifyNone(t)
}
